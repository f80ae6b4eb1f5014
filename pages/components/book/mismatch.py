"""The Book page's guard: a citation link into another book, or into a chapter this book does not
have, is explained instead of silently opening a wrong chapter (see links.link_problem)."""

from __future__ import annotations

import streamlit as st

from pages.components.common.links import BOOK_PARAM, link_problem
from pages.components.common.shared import AppContext
from rag.errors import RagError


def other_book_title(ctx: AppContext, book_id: str) -> str:
    """The title the audit log recorded for a book id ("" when unknown or unreadable)."""
    if not book_id or book_id == ctx.settings.book_id or ctx.audit is None:
        return ""
    try:
        books = ctx.audit.books()
    except (RagError, OSError):
        return ""
    titles = books.loc[books["book_id"] == book_id, "book_title"].dropna()
    return str(titles.iloc[0]) if len(titles) else ""


def stop_on_link_problem(ctx: AppContext, chapters: dict) -> None:
    """Say why the link in the URL cannot be followed, offer the book's start, and stop."""
    params = {k: st.query_params.get(k, "") for k in ("module", "chapter", "section", BOOK_PARAM)}
    s = ctx.settings
    problem = link_problem(params, chapters, s.book_id, s.resolved_title,
                           other_book_title(ctx, params[BOOK_PARAM]))
    if not problem:
        return
    st.warning(problem, icon=":material/link_off:")
    if st.button(f"Read {s.resolved_title} from its first chapter", icon=":material/menu_book:",
                 key="reader_start"):
        st.query_params.clear()
        st.session_state.pop("reader_chapter", None)
        st.rerun()
    st.stop()
