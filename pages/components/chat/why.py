"""The "Why this answer" panel under each chat answer: what was searched for, the units quoted,
every hit with whether the answer cited it, its scores and its text, latency and guardrails."""

from __future__ import annotations

from collections.abc import Mapping

import streamlit as st

from pages.components.common.evidence import quoted_units
from pages.components.common.format import markdown_html
from pages.components.common.shared import app_context
from pages.components.common.tables import cited_numbers, hit_name, turn_hits_frame
from rag.answer.guardrails import reason_label
from rag.answer.navigate import where_topic
from rag.answer.query_types import TYPE_LABELS
from rag.answer.response import book_section_names
from rag.answer.wording import as_read

INSPECT_KEY = "inspector_question"
HITS_CONFIG = {
    "#": st.column_config.NumberColumn("#", width=36),
    "section": st.column_config.TextColumn("Section", width=260),
    "cited": st.column_config.TextColumn(
        "Cited", width=70, help="Whether the answer cites this excerpt, and as which source."),
    "dense": st.column_config.NumberColumn("Dense", format="%.3f", width=64),
    "BM25": st.column_config.NumberColumn("BM25", format="%.3f", width=64),
    "term match": st.column_config.NumberColumn(
        "Term match", format="%.3f", width=74,
        help="Share of the question's terms in the excerpt, a composite signal of the blend."),
    "authority": st.column_config.NumberColumn("Authority", format="%.2f", width=68),
    "recency": st.column_config.NumberColumn("Recency", format="%.2f", width=64),
    "blended": st.column_config.NumberColumn("Blended", format="%.3f", width=68),
    "re-rank": st.column_config.NumberColumn("Re-rank", format="%.3f", width=66,
                                             help="The re-ranker's score, when re-ranking ran."),
    "text": st.column_config.TextColumn("Text (start)", width="large"),
}
TEXT_STYLE = ("border-left:3px solid #dfe3e8;padding:0.3rem 0.8rem;margin:0.3rem 0 0.6rem;"
              "line-height:1.5;font-size:0.92rem;max-height:18rem;overflow-y:auto")


def hit_texts(hits: list[dict], passage: str = "") -> dict[str, str]:
    """chunk id -> text for the hits still in the open index (the record keeps only scores);
    a pasted passage's hit gets the passage the answer was given."""
    index = app_context().index
    out = {}
    for h in hits:
        cid = h.get("chunk_id", "")
        if h.get("source", "book") != "book":
            out[cid] = passage
        elif index is not None and cid in index.positions:
            out[cid] = index.chunks[index.positions[cid]].text
    return out


def hit_details_html(hits: list[dict], citations: list[dict], texts: dict[str, str],
                     quotes: list[str], names: Mapping[str, str] | None = None) -> str:
    """One collapsible <details> per hit: rank, section, cited or not, blended score; opened, the
    hit's text with the sentences the answer quoted marked. All text is escaped."""
    blocks = []
    for i, h in enumerate(hits, start=1):
        numbers = cited_numbers(h, citations)
        cited = ("cited as " + ", ".join(f"[{n}]" for n in numbers)) if numbers else "not cited"
        text = texts.get(h.get("chunk_id", ""), "")
        body = markdown_html(text, quotes=quotes) if text else (
            "<em>This text is no longer in the book's index (the book changed since).</em>")
        blended = h.get("blended")
        score = f" · blended {float(blended):.3f}" if blended is not None else ""
        name = markdown_html(hit_name(h, names))
        blocks.append(f'<details class="folio-hit"><summary>#{i} · {name} · <strong>{cited}'
                      f"</strong>{score}</summary>"
                      f'<div style="{TEXT_STYLE}">{body}</div></details>')
    return "".join(blocks)


def searched_note(query: str, question: str) -> str:
    """Why what was searched for differs from the question (read only when it does)."""
    read = as_read(question, app_context().index)
    if query == read:
        return " *(the question as read: words about the book, greetings and slips set aside)*"
    if query == where_topic(read):
        return (" *(the topic the question asks the book's place of: the chapters and sections "
                "that treat it are named)*")
    return " *(the question read in its conversation)*"


def why_panel(turn: dict) -> None:
    with st.expander("Why this answer", icon=":material/troubleshoot:"):
        question = turn.get("user_query_text", "")
        query = turn.get("retrieval_query") or question
        note = "" if query.strip() == question.strip() else searched_note(query, question)
        st.markdown(f"**Searched for:** {query.replace('$', chr(92) + '$')}{note}")
        kind = turn.get("query_type") or ""
        if kind in TYPE_LABELS:
            st.caption(f"Question type: {TYPE_LABELS[kind]} — it chose the retrieval settings.")
        quoted_units(turn)
        quotes = turn.get("answer_quotes") or []
        hits = turn.get("chunks_returned") or []
        citations = turn.get("citations") or []
        if hits:
            texts = hit_texts(hits, turn.get("selection_text", ""))
            names = book_section_names(app_context().index)
            cited = sum(bool(cited_numbers(h, citations)) for h in hits)
            st.markdown(f"**What retrieval returned**: {len(hits)} excerpt(s), {cited} cited by "
                        "the answer")
            st.dataframe(turn_hits_frame(hits, citations, texts, names), hide_index=True,
                         width="stretch", column_config=HITS_CONFIG)
            st.caption("Open an excerpt to read it; the sentences the answer quoted are marked.")
            st.markdown(hit_details_html(hits, citations, texts, quotes, names),
                        unsafe_allow_html=True)
        else:
            st.caption("No excerpt passed the threshold.")
        latency = turn.get("stage_latency_ms") or {}
        if latency:
            st.caption("Latency: " + " · ".join(f"{k} {float(v):.0f} ms"
                                                for k, v in latency.items()))
        for v in turn.get("guardrail_actions") or []:
            st.caption(f"Guardrail, {reason_label(v.get('reason_code') or 'unknown')}: "
                       f"{v.get('message', '')}".replace("$", "\\$"))
        if st.button("Open in the retrieval inspector", key=f"inspect-{turn.get('query_id')}",
                     icon=":material/manage_search:", type="tertiary"):
            st.session_state[INSPECT_KEY] = query
            st.switch_page("pages/inspector.py")
