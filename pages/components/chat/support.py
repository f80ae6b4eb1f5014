"""Pure helpers behind the chat page: browser-side history (of answer records), the rate-limit
message, the selection caption and stream splitting. No streamlit import, so each rule is
unit-tested."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from rag.types import Response

HISTORY_VERSION = 2  # 2: entries are answer records (rag.answer.record)
# localStorage: one key per book; Folio before books were told apart kept one unkeyed history.
LEGACY_STORAGE_KEY = "folio.chat.history.v1"
HISTORY_MAX_QUESTIONS = 20
HISTORY_MAX_AGE = timedelta(days=7)
CLOCK_SKEW = timedelta(minutes=5)  # entries stamped slightly in the future are still kept


# -- conversation history (kept in the browser, never on the server) ---------------------------

def _parse_time(value: Any) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(value))
    except (TypeError, ValueError):
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def prune_history(turns: Iterable[dict], now: datetime | None = None,
                  max_questions: int = HISTORY_MAX_QUESTIONS,
                  max_age: timedelta = HISTORY_MAX_AGE) -> list[dict]:
    """The last `max_questions` turns younger than `max_age`; undated or malformed turns go."""
    now = now or datetime.now(UTC)
    kept = [t for t in turns if isinstance(t, dict) and isinstance(t.get("user_query_text"), str)
            and (stamp := _parse_time(t.get("timestamp"))) is not None
            and -CLOCK_SKEW <= now - stamp <= max_age]
    return kept[-max_questions:] if max_questions > 0 else []


@dataclass(frozen=True)
class StoredHistory:
    session_id: str
    turns: list[dict]


def parse_history(raw: str | None, now: datetime | None = None) -> StoredHistory:
    """What localStorage held, pruned; anything unreadable counts as no history."""
    try:
        data = json.loads(raw) if raw else {}
    except (TypeError, ValueError):
        data = {}
    if not isinstance(data, dict) or data.get("version") != HISTORY_VERSION:
        return StoredHistory("", [])
    session_id = data.get("session_id")
    turns = data.get("turns") if isinstance(data.get("turns"), list) else []
    return StoredHistory(session_id if isinstance(session_id, str) else "",
                         prune_history(turns, now))


def serialize_history(session_id: str, turns: Sequence[dict]) -> str:
    return json.dumps({"version": HISTORY_VERSION, "session_id": session_id,
                       "turns": list(turns)}, ensure_ascii=False, separators=(",", ":"))


def merge_history(stored: Sequence[dict], current: Sequence[dict],
                  now: datetime | None = None) -> list[dict]:
    """Stored turns, then this tab's turns that are not already among them (by query id)."""
    seen = {t.get("query_id") for t in stored if t.get("query_id")}
    return prune_history([*stored, *[t for t in current if t.get("query_id") not in seen]], now)


def storage_key(book_id: str) -> str:
    """The localStorage key of one book's conversation."""
    return f"{LEGACY_STORAGE_KEY}.book.{book_id or 'unknown'}"


def legacy_turns_of_book(raw: str | None, book_id: str,
                         now: datetime | None = None) -> StoredHistory | None:
    """The unkeyed history of an older Folio, if it provably belongs to `book_id`: it has turns
    and every turn records that book id (older records carry none, so they stay where they are
    and are never shown under a book). None otherwise."""
    stored = parse_history(raw, now)
    if not book_id or not stored.turns or \
            any(t.get("book_id") != book_id for t in stored.turns):
        return None
    return stored


def conversation_messages(turns: Sequence[dict], limit: int) -> list[dict[str, str]]:
    """The last `limit` chat messages (question, answer, question, ...) for follow-ups."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        messages.append({"role": "user", "content": turn.get("user_query_text", "")})
        if turn.get("status") != "error" and turn.get("answer_text"):
            messages.append({"role": "assistant", "content": turn["answer_text"]})
    return messages[-limit:] if limit > 0 else []


# -- rate limit ---------------------------------------------------------------------------------

def rate_limit_message(limit: int, retry_after_s: float) -> str:
    return (f"You have asked {limit} questions in the last minute, the limit for one browser "
            f"session. Please wait {max(1, round(retry_after_s))} s and ask again.")


# -- selection ----------------------------------------------------------------------------------

def format_age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def selection_caption(text: str, pasted_at: datetime | None, now: datetime | None = None) -> str:
    """"1,234 characters · pasted 2 min ago" (st.markdown), with what keeps it from being used in
    orange."""
    from rag.answer.context import MAX_SELECTION, MIN_SELECTION, SELECTION_TTL

    now = now or datetime.now(UTC)
    length = len(text.strip())
    parts = [f"{length:,} characters"]
    if pasted_at is not None and length:
        parts.append(f"pasted {format_age((now - pasted_at).total_seconds())}")
    problem = ""
    if 0 < length < MIN_SELECTION:
        problem = f"needs at least {MIN_SELECTION} to be used"
    elif length > MAX_SELECTION:
        problem = f"over the {MAX_SELECTION:,} limit, so the full book is searched"
    elif pasted_at is not None and length and now - pasted_at >= SELECTION_TTL:
        problem = "older than 5 minutes: paste it again"
    if problem:
        parts.append(f":orange[{problem}]")
    return " · ".join(parts)


# -- streaming ----------------------------------------------------------------------------------

class StreamCapture:
    """Splits Pipeline.answer_stream into text deltas (for st.write_stream) and the Response."""

    def __init__(self, items: Iterable[str | Response]) -> None:
        self._items = items
        self.response: Response | None = None

    def deltas(self) -> Iterator[str]:
        for item in self._items:
            if isinstance(item, Response):
                self.response = item
            elif item:
                yield item
