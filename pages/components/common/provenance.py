"""Where the active tuned values came from, said with their book: a threshold or a gate tuned on
another book is marked as such wherever its provenance is shown (sidebar, tuning page)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from rag.config import PROJECT_ROOT, Settings
from rag.config.identity import is_book

OTHER_BOOK = "tuned on another book ({book})"


def tuned_note(settings: Settings, what: str) -> str:
    """" · tuned on another book (data/book)" for `threshold` or `gate`, "" when it is this
    book's or its book is not recorded."""
    book = settings.tuned_elsewhere(what)
    return f" · {OTHER_BOOK.format(book=book)}" if book else ""


def threshold_provenance(settings: Settings) -> str:
    """The threshold's source as the sidebar and the tuning page show it."""
    return (settings.threshold_source or "built-in default") + tuned_note(settings, "threshold")


def history_books(settings_data: dict[str, Any], settings: Settings) -> list[str]:
    """The `book` of each `[[history]]` entry, newest first (as history tables list them), with
    another book's marked: "data/book (another book)"."""
    out = []
    for entry in settings_data.get("history", []):
        if not isinstance(entry, dict):
            continue
        book = entry.get("book")
        if not isinstance(book, str) or not book:
            out.append("")
        else:
            this = is_book(book, settings.book_dir, PROJECT_ROOT)
            out.append(book if this else f"{book} (another book)")
    return out[::-1]


def with_books(history: pd.DataFrame, settings_data: dict[str, Any],
               settings: Settings) -> pd.DataFrame:
    """A history table (newest first) with a `book` column after the date."""
    books = history_books(settings_data, settings)
    if len(books) != len(history):
        return history
    rest = [c for c in history.columns if c not in ("date", "book")]
    return history.assign(book=books)[["date", "book", *rest]]
