"""The empty chat's starting point: what the book holds (its chapters, in the book's order) and,
on request, questions to try, made offline from the book's own structure by the starter-set
generator (rag.tuning.starter), cached per version of the book. A question picked is asked as if
typed."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rag.errors import RagError
from rag.tuning.starter import generate_starter

PICKED_KEY = "chat_picked_question"
SHOWN_KEY = "chat_suggestions_for"  # the book version whose suggestions are shown
SUGGESTIONS = 4
CHAPTERS_SHOWN = 8


@st.cache_data(show_spinner=False, max_entries=8)
def suggested_questions(book_dir: str, book_hash: str) -> list[str]:
    """In-scope starter questions of this version of the book (`book_hash` keys the cache)."""
    try:
        starter = generate_starter(Path(book_dir), max_questions=12)
    except RagError:
        return []
    return [q.question for q in starter.questions if q.in_scope][:SUGGESTIONS]


def chapter_titles(manifest: dict) -> list[str]:
    chapters = sorted(manifest.get("chapters", {}).values(), key=lambda c: c.get("position", 0))
    return [str(c["title"]) for c in chapters if c.get("title")]


def _pick(question: str) -> None:
    st.session_state[PICKED_KEY] = question


def starting_point(ctx) -> None:
    """The book's chapters and, once asked for, questions to try (buttons that ask them)."""
    manifest = ctx.index.manifest if ctx.index is not None else {}
    titles = chapter_titles(manifest)
    if titles:
        more = len(titles) - CHAPTERS_SHOWN
        st.caption(f"**{ctx.settings.resolved_title}** has {len(titles)} chapters: "
                   + ", ".join(titles[:CHAPTERS_SHOWN]) + (f" and {more} more." if more > 0
                                                            else "."))
    version = str(manifest.get("book_hash", ""))
    if st.session_state.get(SHOWN_KEY) != version:
        if st.button("Suggest questions to try", icon=":material/lightbulb:", type="tertiary",
                     help="Questions made from the book's headings and definitions, offline."):
            st.session_state[SHOWN_KEY] = version
            st.rerun()
        return
    with st.spinner("Reading the book for questions…"):
        questions = suggested_questions(str(ctx.settings.book_dir), version)
    if not questions:
        st.caption("No question could be made from this book's headings; ask your own.")
    for n, question in enumerate(questions):
        st.button(question, key=f"suggested_{n}", icon=":material/help:", on_click=_pick,
                  args=(question,))


def picked_question() -> str | None:
    """A suggested question the reader clicked, once."""
    return st.session_state.pop(PICKED_KEY, None)
