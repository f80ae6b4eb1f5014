"""Replay logged questions: re-rank their stored candidate pools under new settings, no embedding.

Input rows are audit-log dicts (`log_id`, `timestamp`, `user_query_text`, `candidate_pool` as
the JSON of `pool_to_record`, `settings` as JSON with w_dense, threshold and top_k, `status`).
Both outcomes are recomputed from the pool, so the comparison isolates the change of settings;
the logged status is shown alongside. A question counts as answered when some hit passes the
threshold and the capability guardrail does not refuse it.

A pool's sections are its own book's, so a replay is of one book's questions unless asked for
more: `books` names the book ids to replay ("" for rows logged before the book was recorded);
rows of other books are counted, not replayed.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd

from rag.answer.guardrails import check_capability
from rag.retrieval.hybrid import pool_from_record, rank_candidates
from rag.types import Retrieval, RetrievalSettings

ANSWERED_TO_REFUSED = "answered → refused"
REFUSED_TO_ANSWERED = "refused → answered"
TOP_CHANGED = "top section changed"
COLUMNS = ("log_id", "timestamp", "question", "status", "old_answered", "new_answered",
           "old_top_section", "new_top_section", "old_best", "new_best", "change", "book_id")


@dataclass(frozen=True, eq=False)
class ReplayResult:
    rows: pd.DataFrame  # one row per replayed question, COLUMNS
    skipped: tuple[str, ...]  # "log_id: reason" for rows that could not be replayed
    other_books: int = 0  # rows left out because they were asked of a book not asked for

    @property
    def changed(self) -> pd.DataFrame:
        return self.rows[self.rows["change"] != ""].reset_index(drop=True)

    def summary(self) -> dict[str, int]:
        counts = self.rows["change"].value_counts()
        return {"replayed": len(self.rows), "skipped": len(self.skipped),
                **{name: int(counts.get(name, 0))
                   for name in (ANSWERED_TO_REFUSED, REFUSED_TO_ANSWERED, TOP_CHANGED)}}


def _loads(value: Any) -> dict:
    data = json.loads(value) if isinstance(value, str | bytes) else value
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def logged_settings(raw: Any) -> RetrievalSettings:
    """The retrieval settings a logged question ran with; missing keys take the defaults."""
    data = _loads(raw)
    names = ("w_dense", "threshold", "top_k")
    values = {k: type(getattr(RetrievalSettings(), k))(data[k]) for k in names if k in data}
    settings = dataclasses.replace(RetrievalSettings(), **values)
    if not (0 <= settings.w_dense <= 1 and 0 <= settings.threshold <= 1 and settings.top_k >= 1):
        raise ValueError(f"settings out of range: {values}")
    return settings


def _as_time(value: Any) -> pd.Timestamp | None:
    if value is None or value == "":
        return None
    stamp = pd.Timestamp(value)
    return stamp.tz_convert("UTC").tz_localize(None) if stamp.tzinfo else stamp


def _outcome(retrieval: Retrieval, refused: bool) -> tuple[bool, str, float]:
    top = retrieval.hits[0].chunk.section_ref if retrieval.hits else ""
    return bool(retrieval.hits) and not refused, top, round(retrieval.best_score, 4)


def _change(old: tuple[bool, str, float], new: tuple[bool, str, float]) -> str:
    if old[0] != new[0]:
        return ANSWERED_TO_REFUSED if old[0] else REFUSED_TO_ANSWERED
    return TOP_CHANGED if old[0] and old[1] != new[1] else ""


def book_of(row: dict[str, Any]) -> str:
    """A logged row's book id; "" for a row logged before the book was recorded."""
    book = row.get("book_id")
    return book if isinstance(book, str) else ""


def replay(rows: Iterable[dict[str, Any]], new: RetrievalSettings,
           old: RetrievalSettings | None = None, since: datetime | str | None = None,
           until: datetime | str | None = None,
           books: Collection[str] | None = None) -> ReplayResult:
    """Outcomes under each row's logged settings (or `old`) and under `new`, oldest first.
    since/until bound the rows' timestamps (inclusive); books, when given, the book ids."""
    start, end = _as_time(since), _as_time(until)
    out: list[dict[str, Any]] = []
    skipped: list[str] = []
    other_books = 0
    for row in rows:
        log_id = row.get("log_id", "")
        if books is not None and book_of(row) not in books:
            other_books += 1
            continue
        stamp = _as_time(row.get("timestamp"))
        if (start is not None and (stamp is None or stamp < start)) or \
                (end is not None and (stamp is None or stamp > end)):
            continue
        try:
            pool = pool_from_record(_loads(row.get("candidate_pool")))
            before = old or logged_settings(row.get("settings"))
        except (ValueError, TypeError, KeyError) as e:
            skipped.append(f"{log_id}: no usable candidate pool or settings ({e})")
            continue
        question = row.get("user_query_text") or pool.query
        refused = check_capability(question, "", "") is not None
        was = _outcome(rank_candidates(pool, before), refused)
        now = _outcome(rank_candidates(pool, new), refused)
        out.append({"log_id": log_id, "timestamp": stamp, "question": question,
                    "status": row.get("status", ""), "old_answered": was[0],
                    "new_answered": now[0], "old_top_section": was[1],
                    "new_top_section": now[1], "old_best": was[2], "new_best": now[2],
                    "change": _change(was, now), "book_id": book_of(row)})
    frame = pd.DataFrame(out, columns=list(COLUMNS))
    if len(frame):
        frame = frame.sort_values("timestamp", kind="stable").reset_index(drop=True)
    return ReplayResult(frame, tuple(skipped), other_books)
