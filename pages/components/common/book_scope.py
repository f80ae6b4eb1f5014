"""Which book's logged questions a view covers: the current book by default, another one, the
rows logged before Folio recorded books, or all of them (audit explorer, replay)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from rag.audit.filters import UNKNOWN_BOOK
from rag.config import Settings
from rag.errors import RagError

ALL_BOOKS = "*"  # not a book id: slugs have no "*"
UNKNOWN_LABEL = "unknown book"


def book_label(book_id: str | None, title: str | None) -> str:
    """How a logged row's book is shown: its title, else its id, else "unknown book"."""
    title = "" if title is None or pd.isna(title) else str(title)
    book_id = "" if book_id is None or pd.isna(book_id) else str(book_id)
    return title or book_id or UNKNOWN_LABEL


def book_options(books: pd.DataFrame, current_id: str, current_title: str) -> dict[str, str]:
    """value -> label: the current book first, the other logged books (most recently asked
    first), the rows of no recorded book, then all books."""
    options = {current_id: f"{current_title} (this book)"}
    logged = zip(books.get("book_id", []), books.get("book_title", []), strict=True)
    for book_id, title in sorted(logged, key=lambda pair: not pair[0]):  # stable: keeps recency
        book_id = str(book_id or "")
        if book_id not in options:
            label = book_label(book_id, title)
            options[book_id] = (f"{label} (logged before books were recorded)"
                                if book_id == UNKNOWN_BOOK else label)
    options[ALL_BOOKS] = "All books"
    return options


def books_of(choice: str) -> tuple[str, ...]:
    """The AuditFilters.books a choice stands for: () is every book."""
    return () if choice == ALL_BOOKS else (choice,)


def logged_books(reader) -> pd.DataFrame:
    """The books the log knows; none when it cannot be read now (the view still opens)."""
    try:
        return reader.books()
    except (RagError, OSError):
        return pd.DataFrame(columns=["book_id", "book_title"])


def book_filter(reader, settings: Settings, key: str, where=st) -> tuple[str, ...]:
    """A "Book" select (this book preselected); returns the books filter it stands for."""
    options = book_options(logged_books(reader), settings.book_id, settings.resolved_title)
    if st.session_state.get(key) not in options:
        st.session_state.pop(key, None)  # a book no longer in the log: back to this one
    choice = where.selectbox("Book", list(options), format_func=options.__getitem__, key=key,
                             persist_state="session",
                             help="Questions asked of this book, of another book, or of all.")
    return books_of(choice)


def elsewhere_note(reader, books: Sequence[str]) -> str:
    """When the chosen book has no questions: how many the log holds for other books."""
    logged = logged_books(reader)
    others = int(logged.loc[~logged["book_id"].isin(list(books)), "questions"].sum()) \
        if books and len(logged) else 0
    counted = "1 question of other books is" if others == 1 else \
        f"{others} questions of other books are"
    return (f" {counted} logged: choose another book or All books in the Book filter."
            if others else "")
