"""The explorer's read side: filtered pages, one log in full, aggregates and exports.

Shared by AuditStore (the DuckDB file plus every process's spooled rows) and SpoolSnapshot (spooled
rows only, read while the file cannot be); both provide `_reading()`, a connection, the archive
folder and `hot_source`, the relation of hot rows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import pandas as pd

from rag.audit.filters import SHOWN_CONFIDENCE, AuditFilters, Scope, source_sql
from rag.audit.safe_text import TEXT_COLUMNS, csv_cell_sql
from rag.audit.schema import JSON_COLUMNS, LIST_COLUMNS, TABLE
from rag.errors import InputError

LIST_VIEW_COLUMNS = ("log_id", "timestamp", "status", "source_mode", "mode_used",
                     "confidence_score", "confidence_level", "reason_codes", "llm_provider",
                     "llm_model", "total_latency_ms", "session_id", "user_query_text",
                     "answer_text", "book_id", "book_title", "query_type", "client_id")
EXPORT_FORMATS = ("csv", "parquet")
T = TypeVar("T")
STAGES = (("retrieval", "retrieval_latency_ms"), ("synthesis", "synthesis_latency_ms"),
          ("total", "total_latency_ms"))


def _rate(part: int, total: int) -> float:
    return round(part / total, 4) if total else 0.0


class AuditReader:
    archive_dir: Path | None = None
    hot_source: str = TABLE

    def _reading(self) -> AbstractContextManager[duckdb.DuckDBPyConnection]:
        raise NotImplementedError

    def _read(self, work: Callable[[duckdb.DuckDBPyConnection], T]) -> T:
        """work(con) on a reading connection (AuditStore retries it once after healing)."""
        with self._reading() as con:
            return work(con)

    def _frame(self, sql: str, filters: AuditFilters | None, include_archive: bool,
               extra: tuple[Any, ...] = ()) -> pd.DataFrame:
        """Run sql where `{logs}` is the filtered relation; return a DataFrame."""
        scope = Scope.build(filters, self.archive_dir, include_archive, self.hot_source)
        return self._read(lambda con: con.execute(sql.format(logs=scope.sql),
                                                  [*scope.params, *extra]).df())

    def _row(self, sql: str, filters: AuditFilters | None,
             include_archive: bool) -> dict[str, Any]:
        """The single row of an aggregate query as a dict of plain Python values."""
        scope = Scope.build(filters, self.archive_dir, include_archive, self.hot_source)

        def work(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            cur = con.execute(sql.format(logs=scope.sql), list(scope.params))
            row = cur.fetchone()
            return dict(zip([d[0] for d in cur.description], row, strict=True))

        return self._read(work)

    def query_logs(self, filters: AuditFilters | None = None, limit: int = 50, offset: int = 0,
                   include_archive: bool = False) -> pd.DataFrame:
        """One page of logs, newest first, without the large JSON columns."""
        if limit < 0 or offset < 0:
            raise InputError("Paging needs a limit and an offset of 0 or more.")
        cols = ", ".join([*(f'"{c}"' for c in LIST_VIEW_COLUMNS),
                          f"{SHOWN_CONFIDENCE} AS shown_confidence"])
        return self._frame(f'SELECT {cols} FROM {{logs}} ORDER BY "timestamp" DESC, log_id '
                           "LIMIT ? OFFSET ?", filters, include_archive, (limit, offset))

    def count_logs(self, filters: AuditFilters | None = None,
                   include_archive: bool = False) -> int:
        return int(self._row("SELECT count(*) AS n FROM {logs}", filters, include_archive)["n"])

    def get_log(self, log_id: str, include_archive: bool = True) -> dict[str, Any] | None:
        """Everything recorded for one question, JSON columns parsed; archived rows too."""
        source, params = source_sql(self.archive_dir, include_archive, self.hot_source)

        def work(con: duckdb.DuckDBPyConnection) -> tuple[Any, list[str]]:
            cur = con.execute(f"SELECT * FROM {source} WHERE log_id = ? LIMIT 1",
                              [*params, log_id])
            return cur.fetchone(), [d[0] for d in cur.description]

        row, names = self._read(work)
        if row is None:
            return None
        record = dict(zip(names, row, strict=True))
        for name in JSON_COLUMNS:
            if isinstance(record.get(name), str):
                record[name] = json.loads(record[name])
        return record

    def query_counts(self, query_ids: list[str],
                     include_archive: bool = False) -> dict[str, int]:
        """Rows per query id (the id an API or CLI answer carries) among these; absent ids are
        not logged (yet)."""
        if not query_ids:
            return {}
        frame = self._frame("SELECT query_id, count(*) AS n FROM {logs} WHERE "
                            "list_contains(?::VARCHAR[], query_id) GROUP BY query_id", None,
                            include_archive, (list(query_ids),))
        return {str(q): int(n) for q, n in zip(frame["query_id"], frame["n"], strict=True)}

    def stats(self, filters: AuditFilters | None = None,
              include_archive: bool = False) -> dict[str, Any]:
        out = self._row(f"""
            SELECT count(*) AS total, count_if(success)::BIGINT AS answered,
                   count_if(status = 'partial')::BIGINT AS partial,
                   count_if(status = 'refused')::BIGINT AS refused,
                   count_if(status = 'error')::BIGINT AS errors,
                   min("timestamp") AS first, max("timestamp") AS last,
                   quantile_cont(total_latency_ms, 0.5) AS latency_p50_ms,
                   quantile_cont(total_latency_ms, 0.95) AS latency_p95_ms,
                   avg({SHOWN_CONFIDENCE}) FILTER (WHERE status <> 'error') AS confidence_mean
            FROM {{logs}}""", filters, include_archive)
        for key in ("latency_p50_ms", "latency_p95_ms", "confidence_mean"):
            out[key] = None if out[key] is None else round(float(out[key]), 4)
        total = out["total"]
        out.update(answer_rate=_rate(out["answered"], total),
                   refusal_rate=_rate(out["refused"], total),
                   error_rate=_rate(out["errors"], total))
        return out

    def questions_per_day(self, filters: AuditFilters | None = None,
                          include_archive: bool = False) -> pd.DataFrame:
        return self._frame("""
            SELECT CAST("timestamp" AS DATE) AS day, count(*) AS questions,
                   count_if(success)::BIGINT AS answered,
                   count_if(status = 'refused')::BIGINT AS refused,
                   count_if(status = 'error')::BIGINT AS errors
            FROM {logs} GROUP BY day ORDER BY day""", filters, include_archive)

    def latency_by_stage(self, filters: AuditFilters | None = None,
                         include_archive: bool = False) -> pd.DataFrame:
        """p50/p95 per stage (ms) over the rows where that stage ran (latency above 0)."""
        parts = ", ".join(f"quantile_cont({c}, [0.5, 0.95]) FILTER (WHERE {c} > 0) AS {s}, "
                          f"count({c}) FILTER (WHERE {c} > 0) AS {s}_n" for s, c in STAGES)
        row = self._row(f"SELECT {parts} FROM {{logs}}", filters, include_archive)
        records = []
        for stage, _ in STAGES:
            p50, p95 = row[stage] or (None, None)
            records.append({"stage": stage, "p50_ms": p50, "p95_ms": p95,
                            "count": int(row[f"{stage}_n"])})
        return pd.DataFrame.from_records(records)

    def confidence_histogram(self, filters: AuditFilters | None = None, bins: int = 10,
                             include_archive: bool = False) -> pd.DataFrame:
        """Counts of confidence scores in `bins` equal bins over [0, 1]; error rows excluded."""
        bins = int(bins)
        if not 1 <= bins <= 100:
            raise InputError(f"A histogram needs 1 to 100 bins, not {bins}.")
        counts = self._frame(f"""
            SELECT least(greatest(floor({SHOWN_CONFIDENCE} * {bins})::INTEGER, 0), {bins - 1})
                   AS bin, count(*) AS count
            FROM {{logs}} WHERE confidence_score IS NOT NULL AND status <> 'error'
            GROUP BY bin""", filters, include_archive)
        return self._histogram(counts, bins)

    @staticmethod
    def _histogram(counts: pd.DataFrame, bins: int) -> pd.DataFrame:
        by_bin = dict(zip(counts["bin"].astype(int), counts["count"].astype(int), strict=True))
        return pd.DataFrame({"bin_start": [round(i / bins, 6) for i in range(bins)],
                             "bin_end": [round((i + 1) / bins, 6) for i in range(bins)],
                             "count": [by_bin.get(i, 0) for i in range(bins)]})

    def refusal_reasons(self, filters: AuditFilters | None = None,
                        include_archive: bool = False) -> pd.DataFrame:
        """Per guardrail reason code: refusals it was part of, and all rows that carry it."""
        return self._frame("""
            WITH codes AS (
                SELECT unnest(CASE WHEN len(coalesce(reason_codes, [])) > 0 THEN reason_codes
                                   WHEN status = 'refused' THEN ['(none)']
                                   ELSE []::VARCHAR[] END) AS reason_code, status
                FROM {logs})
            SELECT reason_code, count_if(status = 'refused')::BIGINT AS refused,
                   count(*) AS total
            FROM codes GROUP BY reason_code ORDER BY refused DESC, total DESC, reason_code""",
                           filters, include_archive)

    def most_asked(self, filters: AuditFilters | None = None, n: int = 10,
                   include_archive: bool = False) -> pd.DataFrame:
        """Questions grouped case- and space-insensitively; the latest wording is shown."""
        return self._frame(f"""
            SELECT arg_max(user_query_text, "timestamp") AS question, count(*) AS count,
                   count_if(success)::BIGINT AS answered, max("timestamp") AS last_asked,
                   avg({SHOWN_CONFIDENCE}) AS confidence_mean
            FROM {{logs}} WHERE trim(coalesce(user_query_text, '')) <> ''
            GROUP BY lower(trim(user_query_text))
            ORDER BY count DESC, last_asked DESC LIMIT ?""", filters, include_archive, (n,))

    def books(self, include_archive: bool = False) -> pd.DataFrame:
        """Every book with logged questions: `book_id` ("" for rows logged before the book was
        recorded), its latest `book_title`, `questions`, newest first by last question."""
        return self._frame("""
            SELECT coalesce(book_id, '') AS book_id,
                   arg_max(book_title, "timestamp") AS book_title,
                   count(*) AS questions, max("timestamp") AS last_asked
            FROM {logs} GROUP BY 1 ORDER BY last_asked DESC, book_id""", None, include_archive)

    def clients(self, include_archive: bool = False) -> list[str]:
        """Everyone who asked (API key names, "role:<role>", "local"), most questions first."""
        frame = self._frame("""
            SELECT coalesce(client_id, '') AS client, count(*) AS questions FROM {logs}
            GROUP BY 1 ORDER BY questions DESC, client""", None, include_archive)
        return [str(c) for c in frame["client"]]

    def sections_cited(self, filters: AuditFilters | None = None, n: int = 10,
                       include_archive: bool = False) -> pd.DataFrame:
        """Sections (`module/chapter#section`) by the number of answers citing them, per book
        (`book_id`, "" when unknown): the same id in two books is two sections."""
        return self._frame("""
            SELECT book_id, section, count(*) AS answers
            FROM (SELECT coalesce(book_id, '') AS book_id, unnest(cited_sections) AS section
                  FROM {logs})
            GROUP BY book_id, section ORDER BY answers DESC, section, book_id LIMIT ?""",
                           filters, include_archive, (n,))

    def sections_never_cited(self, filters: AuditFilters | None, all_sections: list[str],
                             include_archive: bool = False) -> list[str]:
        """The given sections (`module/chapter#section` or `chapter#section`) nobody cited."""
        cited = set(self._frame("SELECT DISTINCT unnest(cited_sections) AS section FROM {logs}",
                                filters, include_archive)["section"])
        cited |= {key.split("/", 1)[-1] for key in cited}
        return [s for s in all_sections if s not in cited]

    def export(self, filters: AuditFilters | None, path: Path, fmt: str = "csv",
               include_archive: bool = False) -> int:
        """Write the filtered rows (all columns) to CSV or Parquet; returns the row count. In
        CSV a text cell that would start a spreadsheet formula is prefixed with an apostrophe
        (rag.audit.safe_text); Parquet keeps every value as logged."""
        if fmt not in EXPORT_FORMATS:
            raise InputError(f"Export format {fmt!r} is not supported; use csv or parquet.")
        path = Path(path)
        if not path.parent.is_dir():
            raise InputError(f"{path.parent} is not a folder; create it or choose another path.")
        lists = [f"to_json({c}) AS {c}" for c in LIST_COLUMNS]
        texts = [f'{csv_cell_sql(c)} AS "{c}"' for c in TEXT_COLUMNS]  # no formulas
        select = f"* REPLACE ({', '.join(lists + texts)})" if fmt == "csv" else "*"
        options = "FORMAT csv, HEADER" if fmt == "csv" else "FORMAT parquet, COMPRESSION zstd"
        temp = path.with_name(f".{path.name}.partial")
        literal = str(temp).replace("'", "''")
        scope = Scope.build(filters, self.archive_dir, include_archive, self.hot_source)
        try:
            rows = self._read(lambda con: con.execute(
                f"COPY (SELECT {select} FROM {scope.sql} ORDER BY \"timestamp\", log_id) TO "
                f"'{literal}' ({options})", list(scope.params)).fetchone()[0])
            os.replace(temp, path)
        finally:
            temp.unlink(missing_ok=True)
        return int(rows)

