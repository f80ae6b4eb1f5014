"""How the chat shows one answer, and the selected-text panel."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import streamlit as st

from pages.components.chat.why import why_panel
from pages.components.common.citing import answer_markdown, more_markdown, sources_markdown
from pages.components.common.format import (
    badges_markdown,
    highlight_sentences,
    notice_lines,
    sentence_spans,
    verdict_caption,
)
from pages.components.common.shared import link_base_url
from rag.types import MODE_NAMES

SELECTION_KEY = "_folio_selection"  # survives mode switches (widget state would not)
SELECTION_TIME_KEY = "_folio_selection_time"
SELECTION_WIDGET = "selection_input"
QUOTES_KEY = "_folio_selection_quotes"
CLEARED_KEY = "_folio_selection_cleared"
PANEL_KEY = "folio_passage_panel"  # the container's CSS class is st-key-<key>
PASSAGE_KEPT = 4000  # characters of a passage an answer keeps in the browser's history
PASSAGE_CONTEXT = 300  # around each quoted sentence, when a long passage is cut
# The paste panel's column follows the reader down the conversation, so the passage and the
# newest answer stay in view together (below the app's header, above the chat input).
PANEL_CSS = ("<style>div[data-testid='stColumn']:has(.st-key-" + PANEL_KEY + "){position:sticky;"
             "top:4rem;align-self:flex-start;max-height:calc(100vh - 11rem);overflow-y:auto}"
             "</style>")
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


def kept_passage(text: str, quotes: list[str]) -> str:
    """The passage an answer keeps with it in the history: whole up to PASSAGE_KEPT characters,
    else the stretches around the sentences it quoted (or its start), joined by " … "."""
    text = text.strip()
    if len(text) <= PASSAGE_KEPT:
        return text
    spans = sorted(sentence_spans(text, quotes))
    if not spans:
        return text[:PASSAGE_KEPT].rstrip() + " …"
    parts: list[tuple[int, int]] = []
    for start, stop in spans:
        a, b = max(0, start - PASSAGE_CONTEXT), min(len(text), stop + PASSAGE_CONTEXT)
        if parts and a <= parts[-1][1]:
            parts[-1] = (parts[-1][0], max(parts[-1][1], b))
        else:
            parts.append((a, b))
    kept = ("… " if parts[0][0] else "") + " … ".join(text[a:b].strip() for a, b in parts) \
        + (" …" if parts[-1][1] < len(text) else "")
    return kept if len(kept) <= PASSAGE_KEPT else kept[:PASSAGE_KEPT].rstrip() + " …"


def selection_panel(caption: str) -> None:
    """Paste box, character count and age, and the passage quoted with used sentences marked;
    the column it is in stays in view while the conversation scrolls."""
    st.markdown(PANEL_CSS, unsafe_allow_html=True)
    with st.container(key=PANEL_KEY):
        _panel(caption)


def _panel(caption: str) -> None:
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

def render_turn(turn: dict, latest: bool = False) -> None:
    with st.chat_message("user"):
        st.markdown(turn["user_query_text"].replace("$", "\\$"))
    with st.chat_message("assistant"):
        render_answer(turn, latest)


def passage_used(turn: dict, latest: bool) -> None:
    """The passage an answer was given, inside that answer (open on the newest one), with the
    sentences it used marked: the answer and its passage are read together."""
    passage = turn.get("selection_text") or ""
    if not passage or turn.get("mode_used") in (None, "full-book"):
        return
    chars = int(turn.get("selection_chars") or len(passage))
    with st.expander(f"The passage this answer used ({chars:,} characters)",
                     icon=":material/format_quote:", expanded=latest):
        st.markdown(f'<div class="folio-passage-used" style="{PASSAGE_STYLE}">'
                    f"{highlight_sentences(passage, turn.get('answer_quotes') or [])}</div>",
                    unsafe_allow_html=True)


def more_from_book(turn: dict, latest: bool) -> None:
    """The passages that scored next under an offline answer, each linked to its section: not
    part of the answer, but often where the rest of it is. Open on the newest answer when its
    confidence is low. Under an offline refusal, the passages that came closest, closed: what
    the book says nearest to the question, for the reader to judge."""
    more = turn.get("answer_more") or []
    if not more:
        return
    where = "the passage" if turn.get("mode_used") == "selection" else "the book"
    if turn.get("status") == "refused":
        label = f"Closest in {where}: the {len(more)} passage(s) that came nearest"
        note = (f"Not an answer: none of {where}'s sentences answers the question clearly "
                "enough to quote; these scored best, with the answerer's probability that each "
                "holds the answer.")
        expanded = False
    else:
        label = f"More from {where}: the {len(more)} passage(s) that scored next"
        note = (f"Not part of the answer: {where}'s own sentences the answerer ranked just below "
                "the ones it quoted, with its probability that each holds the answer.")
        expanded = latest and turn.get("confidence_level") == "low"
    with st.expander(label, icon=":material/library_books:", expanded=expanded):
        st.markdown(more_markdown(more, link_base_url()))
        st.caption(note)


def render_answer(turn: dict, latest: bool = True) -> None:
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
    more_from_book(turn, latest)
    passage_used(turn, latest)
    why_panel(turn)
