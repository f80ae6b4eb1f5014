"""Query validation: what a question must be before any stage sees it (checked once)."""

from __future__ import annotations

from rag.errors import InputError

MAX_QUERY_CHARS = 1000


def validate_query(query: str | bytes) -> str:
    """1-1000 characters of valid UTF-8 without NUL bytes; the reason is said in plain words."""
    if isinstance(query, bytes):
        try:
            query = query.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError("The question is not valid UTF-8 text; paste it again as plain "
                             "text.") from e
    if "\x00" in query:
        raise InputError("The question contains a NUL byte; remove it and ask again.")
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in query):
        raise InputError("The question is not valid UTF-8 text; paste it again as plain text.")
    text = query.strip()
    if not text:
        raise InputError("The question is empty; type a question about the book.")
    if len(text) > MAX_QUERY_CHARS:
        raise InputError(f"The question has {len(text)} characters; the limit is "
                         f"{MAX_QUERY_CHARS}. Shorten it and ask again.")
    return text
