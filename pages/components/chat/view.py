"""How the chat shows one answer, and the selected-text panel."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import streamlit as st

from pages.components.common.format import (
    answer_markdown,
    badges_markdown,
    highlight_sentences,
    notice_lines,
    sources_markdown,
    verdict_caption,
)
from pages.components.common.shared import link_base_url
from pages.components.common.tables import quote_frame, turn_hits_frame
from rag.types import MODE_NAMES

SELECTION_KEY = "_folio_selection"  # survives mode switches (widget state would not)
SELECTION_TIME_KEY = "_folio_selection_time"
SELECTION_WIDGET = "selection_input"
QUOTES_KEY = "_folio_selection_quotes"
CLEARED_KEY = "_folio_selection_cleared"
INSPECT_KEY = "inspector_question"
SCORE = st.column_config.NumberColumn(format="%.3f", width="small")
PASSAGE_STYLE = ("border-left:4px solid #2f5d8a;background:#f5f8fb;padding:0.6rem 0.9rem;"
                 "border-radius:4px;max-height:22rem;overflow-y:auto;line-height:1.55;"
                 "font-size:0.92rem;white-space:normal")


def _digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode()).hexdigest()[:16]


# -- selection ----------------------------------------------------------------------------------

def _on_selection_change() -> None:
    st.session_state[SELECTION_KEY] = st.session_state.get(SELECTION_WIDGET, "")
    st.session_state[SELECTION_TIME_KEY] = datetime.now(UTC)


def current_selection() -> tuple[str, datetime | None]:
    return st.session_state.get(SELECTION_KEY, ""), st.session_state.get(SELECTION_TIME_KEY)


def clear_selection() -> None:
    """Forget a stale selection; done at the top of a run, before the text area exists."""
    for key in (SELECTION_KEY, SELECTION_TIME_KEY, SELECTION_WIDGET, QUOTES_KEY):
        st.session_state.pop(key, None)
    st.session_state[CLEARED_KEY] = True


def remember_quotes(selection: str, quotes: list[str]) -> None:
    st.session_state[QUOTES_KEY] = (_digest(selection), quotes)


def selection_panel(caption: str) -> None:
    """Paste box, character count and age, and the passage quoted with used sentences marked."""
    text = st.session_state.get(SELECTION_KEY, "")
    if SELECTION_WIDGET not in st.session_state:
        st.session_state[SELECTION_WIDGET] = text
    st.markdown("**Selected text**")
    if st.session_state.pop(CLEARED_KEY, False):
        st.warning("The selected text was more than 5 minutes old, so it was cleared. Paste it "
                   "again to ask about it.", icon=":material/timer_off:")
    box = st.expander("Edit the passage", icon=":material/edit:") if text.strip() else st
    box.text_area("Passage", key=SELECTION_WIDGET, on_change=_on_selection_change, height=160,
                  label_visibility="collapsed",
                  placeholder="Paste a passage from the book (50 to 20,000 characters), then "
                              "ask about it below.")
    st.caption(caption)
    if text.strip():
        digest, quotes = st.session_state.get(QUOTES_KEY, ("", []))
        used = quotes if digest == _digest(text) else []
        st.markdown(f'<div class="folio-passage" style="{PASSAGE_STYLE}">'
                    f"{highlight_sentences(text, used)}</div>", unsafe_allow_html=True)
        if used:
            st.caption(":material/format_ink_highlighter: Highlighted: the sentences the last "
                       "answer used.")


def mode_switch() -> str:
    return st.segmented_control("Answer from", list(MODE_NAMES), format_func=MODE_NAMES.get,
                                default="full-book", required=True, key="chat_mode",
                                persist_state="session")


# -- one answer ---------------------------------------------------------------------------------

def render_turn(turn: dict) -> None:
    with st.chat_message("user"):
        st.markdown(turn["user_query_text"].replace("$", "\\$"))
    with st.chat_message("assistant"):
        render_answer(turn)


def render_answer(turn: dict) -> None:
    if turn.get("status") == "error":
        st.error(turn.get("error_message") or "Something went wrong.", icon=":material/error:")
        st.markdown(badges_markdown(turn))
        return
    st.markdown(answer_markdown(turn.get("answer_text", ""), turn.get("citations", []),
                                link_base_url()))
    st.markdown(badges_markdown(turn))
    if turn.get("citations"):
        st.markdown("**Sources**\n\n" + sources_markdown(turn["citations"], link_base_url()))
    for kind, message in notice_lines(turn):
        if kind == "warning":
            st.warning(message, icon=":material/swap_horiz:")
        else:
            st.caption(f":material/info: {message}")
    if caption := verdict_caption(turn):
        st.caption(caption)
    _why(turn)


def _why(turn: dict) -> None:
    with st.expander("Why this answer", icon=":material/troubleshoot:"):
        question = turn.get("user_query_text", "")
        query = turn.get("retrieval_query") or question
        rewritten = query.strip() != question.strip()
        st.markdown(f"**Searched for:** {query.replace('$', chr(92) + '$')}"
                    + (" *(the question read in its conversation)*" if rewritten else ""))
        quotes, supports = turn.get("answer_quotes") or [], turn.get("answer_supports") or []
        if quotes and len(supports) == len(quotes):
            st.markdown("**Quoted from the book** (the model's probability that each unit holds "
                        "the answer; the first one leads)")
            st.dataframe(quote_frame(quotes, supports), hide_index=True, width="stretch",
                         column_config={"probability": SCORE})
        hits = turn.get("chunks_returned") or []
        if hits:
            st.dataframe(turn_hits_frame(hits), hide_index=True, width="stretch",
                         column_config={"dense": SCORE, "BM25": SCORE, "blended": SCORE})
        else:
            st.caption("No excerpt passed the threshold.")
        latency = turn.get("stage_latency_ms") or {}
        if latency:
            st.caption("Latency: " + " · ".join(f"{k} {float(v):.0f} ms"
                                                for k, v in latency.items()))
        if turn.get("guardrail_actions"):
            st.caption("Guardrail verdicts: " + "; ".join(
                f"{v['guardrail']} / {v['reason_code']} → {v['action']}"
                for v in turn["guardrail_actions"]))
        if st.button("Open in the retrieval inspector", key=f"inspect-{turn.get('query_id')}",
                     icon=":material/manage_search:", type="tertiary"):
            st.session_state[INSPECT_KEY] = query
            st.switch_page("pages/inspector.py")
