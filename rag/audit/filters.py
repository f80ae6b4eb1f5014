"""Explorer filters turned into one parameterised, filtered relation over the audit rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag.audit.schema import TABLE

STATUSES = ("success", "partial", "refused", "error")
UNKNOWN_BOOK = ""  # the book id of rows logged before Folio recorded the book (NULL in the table)
# The confidence a reader was shown (pages.components.common.format.badges_markdown): a question
# refused before any answer was drafted (its stage latencies name no synthesis) shows retrieval's
# score, not the stored blend of it with a default for the missing draft; every other row shows
# confidence_score. The explorer's column, filter, histogram and means all use this one.
SHOWN_CONFIDENCE = (
    "(CASE WHEN status = 'refused' AND json_type(stage_latency_ms) = 'OBJECT' "
    "AND len(json_keys(stage_latency_ms)) > 0 "
    "AND NOT json_exists(stage_latency_ms, '$.synthesis') "
    "THEN coalesce(retrieval_confidence, confidence_score) ELSE confidence_score END)")


@dataclass(frozen=True)
class AuditFilters:
    """Every field is optional; naive datetimes are taken as UTC. start inclusive, end exclusive."""

    start: datetime | None = None
    end: datetime | None = None
    modes: tuple[str, ...] = ()  # matches the requested mode or the mode used
    statuses: tuple[str, ...] = ()
    min_confidence: float | None = None
    max_confidence: float | None = None
    reason_codes: tuple[str, ...] = ()  # any of them
    providers: tuple[str, ...] = ()  # llm_provider
    text: str = ""  # case-insensitive, in the question or the answer
    books: tuple[str, ...] = ()  # book ids (UNKNOWN_BOOK for rows without one); () is every book
    query_types: tuple[str, ...] = ()  # rag.answer.query_types names; () is every type
    clients: tuple[str, ...] = ()  # who asked: an API key's name, "role:<role>", "local"


def as_utc(value: datetime) -> datetime:
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def where_clause(filters: AuditFilters | None) -> tuple[str, list[Any]]:
    f = filters or AuditFilters()
    parts: list[str] = []
    params: list[Any] = []

    def add(sql: str, *values: Any) -> None:
        parts.append(sql)
        params.extend(values)

    if f.start is not None:
        add('"timestamp" >= ?', as_utc(f.start))
    if f.end is not None:
        add('"timestamp" < ?', as_utc(f.end))
    if f.modes:
        add("(list_contains(?::VARCHAR[], source_mode) OR list_contains(?::VARCHAR[], mode_used))",
            list(f.modes), list(f.modes))
    if f.statuses:
        add("list_contains(?::VARCHAR[], status)", list(f.statuses))
    if f.min_confidence is not None:
        add(f"{SHOWN_CONFIDENCE} >= ?", float(f.min_confidence))
    if f.max_confidence is not None:
        add(f"{SHOWN_CONFIDENCE} <= ?", float(f.max_confidence))
    if f.reason_codes:
        add("list_has_any(reason_codes, ?::VARCHAR[])", list(f.reason_codes))
    if f.providers:
        add("list_contains(?::VARCHAR[], llm_provider)", list(f.providers))
    if f.books:
        add("list_contains(?::VARCHAR[], coalesce(book_id, ''))", list(f.books))
    if f.query_types:
        add("list_contains(?::VARCHAR[], query_type)", list(f.query_types))
    if f.clients:
        add("list_contains(?::VARCHAR[], coalesce(client_id, ''))", list(f.clients))
    if f.text.strip():
        needle = f.text.strip().lower()
        add("(contains(lower(user_query_text), ?) OR contains(lower(answer_text), ?))",
            needle, needle)
    return (" AND ".join(parts) or "TRUE"), params


def archive_files(archive_dir: Path) -> list[str]:
    return sorted(str(p) for p in archive_dir.glob("year=*/month=*/*.parquet"))


def source_sql(archive_dir: Path | None, include_archive: bool,
               hot: str = TABLE) -> tuple[str, list[Any]]:
    """The hot rows (the table, or a relation such as the table plus spooled rows), alone or
    UNION ALL the archived Parquet months."""
    files = archive_files(archive_dir) if include_archive and archive_dir else []
    if not files:
        return hot, []
    return (f"(SELECT * FROM {hot} UNION ALL BY NAME SELECT * FROM read_parquet(?, "
            f"hive_partitioning = false, union_by_name = true))"), [files]


@dataclass(frozen=True)
class Scope:
    """`SELECT * FROM <source> WHERE <filters>` with its parameters, used as a subquery."""

    sql: str
    params: tuple[Any, ...]

    @classmethod
    def build(cls, filters: AuditFilters | None, archive_dir: Path | None,
              include_archive: bool, hot: str = TABLE) -> Scope:
        source, source_params = source_sql(archive_dir, include_archive, hot)
        where, where_params = where_clause(filters)
        return cls(f"(SELECT * FROM {source} WHERE {where})",
                   tuple(source_params + where_params))
