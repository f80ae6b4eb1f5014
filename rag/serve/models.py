"""Request bodies of the API: what a client may send, checked before any stage runs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rag.config import MAX_HISTORY_MESSAGES
from rag.errors import InputError
from rag.retrieval.query import MAX_QUERY_CHARS, validate_query
from rag.serve.errors import ApiError

Mode = Literal["full-book", "selection", "selection+book"]
MAX_SESSION_ID = 128
MAX_TOP_K = 50
HISTORY_CHARS = 20_000


def checked_question(question: str) -> str:
    """The question as every entry point checks it (1-1000 characters, no NUL); 422 if not."""
    try:
        return validate_query(question)
    except InputError as e:
        raise ApiError(422, "invalid_question", str(e)) from None


class HistoryMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    role: Literal["user", "assistant"]
    content: str = Field(max_length=HISTORY_CHARS)


class AskRequest(BaseModel):
    """POST /v1/ask. The question is checked like everywhere else (1-1000 characters, no NUL);
    a selection outside 50-20,000 characters falls back to the full book with a notice."""

    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"question": "How does a PID loop avoid integral windup?", "mode": "full-book"}]})

    question: str = Field(description=f"1-{MAX_QUERY_CHARS} characters")
    book: str | None = Field(None, max_length=200, description="the book's id (`python -m rag "
                             "books`); this server answers from one book, named in /v1/health")
    mode: Mode = "full-book"
    selection: str | None = Field(None, description="the passage the reader selected")
    session_id: str = Field("", max_length=MAX_SESSION_ID)
    history: list[HistoryMessage] = Field(default_factory=list, max_length=MAX_HISTORY_MESSAGES,
                                          description="earlier turns, oldest first")
    stream: bool = Field(False, description="answer as Server-Sent Events (or send "
                                            "Accept: text/event-stream)")


class SearchRequest(BaseModel):
    """POST /v1/search: the inspector's view of one question."""

    model_config = ConfigDict(extra="forbid", strict=True)

    question: str = Field(description=f"1-{MAX_QUERY_CHARS} characters")
    book: str | None = Field(None, max_length=200, description="the book's id, as in /v1/ask")
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K,
                              description="hits to keep (default: the settings' top_k)")
