"""`audit`: stats · list · show · export · prune · archive · sql · flush over the audit log.

Reads fall back to the spool (and the archive) when another Folio process holds the database,
and say so on stderr. A locked database or a refused console query is a user-level problem:
it is raised as InputError (exit 2) with one sentence saying what to do.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from rag.answer.query_types import QUERY_TYPES
from rag.audit.queries import AuditReader
from rag.audit.safe_text import for_terminal, json_for_terminal
from rag.audit.store import (
    STATUSES,
    AuditDatabaseBusy,
    AuditDatabaseDamaged,
    AuditFilters,
    AuditStore,
    SpoolSnapshot,
)
from rag.config import load_settings
from rag.config.identity import book_id_for
from rag.errors import AuditError, InputError

LOCK_WAIT_S = 3.0  # a running app releases the file after ~2 s idle
STATS_KEYS = ("total", "answered", "partial", "refused", "errors", "first", "last",
              "latency_p50_ms", "latency_p95_ms", "confidence_mean", "answer_rate",
              "refusal_rate", "error_rate")


def register(sub: argparse._SubParsersAction) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="FILE", type=Path,
                        help="audit database (default: RAG_AUDIT_DB or data/audit.duckdb)")
    filters = argparse.ArgumentParser(add_help=False)
    filters.add_argument("--status", action="append", choices=STATUSES,
                         help="only this status (repeatable)")
    filters.add_argument("--since", type=_day, metavar="YYYY-MM-DD", help="from this day (UTC)")
    filters.add_argument("--until", type=_day, metavar="YYYY-MM-DD", help="before this day (UTC)")
    filters.add_argument("--text", default="", help="words in the question or the answer")
    filters.add_argument("--archive", action="store_true", help="include archived months")
    filters.add_argument("--book", metavar="DIR|ID|all", default=None,
                         help="only this book's questions: a book folder or id, or 'all' "
                              "(default: the current book, RAG_BOOK or data/book)")
    filters.add_argument("--type", action="append", choices=QUERY_TYPES, dest="query_types",
                         help="only questions of this type (repeatable)")
    filters.add_argument("--client", action="append", dest="clients", metavar="NAME",
                         help="only questions from this client: an API key's name, "
                              "role:<role> or local (repeatable)")
    audit = sub.add_parser("audit", help="browse, export and maintain the audit log")
    actions = audit.add_subparsers(dest="audit_command", required=True, metavar="ACTION")

    def action(name: str, func: Any, help_: str,
               *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        parser = actions.add_parser(name, help=help_, parents=[common, *parents])
        parser.set_defaults(func=func)
        return parser

    action("stats", run_stats, "totals, rates, latency and confidence", filters).add_argument(
        "--json", action="store_true")
    listing = action("list", run_list, "recent questions, newest first", filters)
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--json", action="store_true")
    action("show", run_show, "everything recorded for one question").add_argument("log_id")
    export = action("export", run_export, "write the filtered rows to CSV or Parquet", filters)
    export.add_argument("--format", choices=("csv", "parquet"), default="csv")
    export.add_argument("out", type=Path)
    action("prune", run_prune, "delete rows older than DAYS (hot table and archive)").add_argument(
        "--older-than", type=int, default=365, metavar="DAYS", dest="days")
    action("archive", run_archive, "move rows older than DAYS to monthly Parquet").add_argument(
        "--older-than", type=int, default=90, metavar="DAYS", dest="days")
    sql = action("sql", run_sql, "read-only SQL over book_logs (the current book), "
                 "audit_logs, audit_archive, audit_all")
    sql.add_argument("query")
    sql.add_argument("--max-rows", type=int, default=200)
    sql.add_argument("--json", action="store_true")
    action("flush", run_flush, "import spooled entries into the database now")


def _day(text: str) -> datetime:
    try:
        return datetime.strptime(text, "%Y-%m-%d")
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not a day like 2025-01-31") from e


def _db_path(args: argparse.Namespace) -> Path:
    return args.db or load_settings().audit_db


def _book_ids(args: argparse.Namespace) -> tuple[str, ...]:
    """--book as filter values: () for all, else the id of a folder or the id given."""
    chosen = getattr(args, "book", None)
    if chosen == "all":
        return ()
    if chosen is None:
        return (load_settings().book_id,)
    return (book_id_for(Path(chosen)) if Path(chosen).is_dir() else chosen,)


def _filters(args: argparse.Namespace) -> AuditFilters:
    return AuditFilters(start=getattr(args, "since", None), end=getattr(args, "until", None),
                        statuses=tuple(getattr(args, "status", None) or ()),
                        text=getattr(args, "text", "") or "", books=_book_ids(args),
                        query_types=tuple(getattr(args, "query_types", None) or ()),
                        clients=tuple(getattr(args, "clients", None) or ()))


@contextmanager
def _store(args: argparse.Namespace) -> Iterator[AuditStore]:
    try:
        store = AuditStore(_db_path(args), lock_timeout_s=LOCK_WAIT_S)
    except AuditError as e:
        raise InputError(str(e)) from e
    try:
        yield store
    except AuditError as e:  # locked, refused, bad input: the user can act on it
        raise InputError(str(e)) from e
    finally:
        store.close()


@contextmanager
def _reader(args: argparse.Namespace) -> Iterator[tuple[AuditReader, bool]]:
    """The store, or the spool snapshot (+ archive) when the file is held by another process or
    damaged."""
    with _store(args) as store:
        try:
            store.flush()
        except (AuditDatabaseBusy, AuditDatabaseDamaged) as e:
            snapshot = SpoolSnapshot(store.db_path, store.spool_dir)
            print(f"note: {e} Showing only the {snapshot.entries} entries still in the spool "
                  f"and the archived months, not the whole log.", file=sys.stderr)
            try:
                yield snapshot, True
            finally:
                snapshot.close()
            return
        yield store, bool(getattr(args, "archive", False))


def run_stats(args: argparse.Namespace) -> int:
    with _reader(args) as (reader, archive):
        stats = reader.stats(_filters(args), include_archive=archive)
    if args.json:
        _print_json({k: stats[k] for k in STATS_KEYS})
        return 0
    for key in STATS_KEYS:
        print(f"{key:>16}: {'' if stats[key] is None else stats[key]}")
    return 0


def run_list(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise InputError("--limit must be 1 or more.")
    with _reader(args) as (reader, archive):
        df = reader.query_logs(_filters(args), limit=args.limit, include_archive=archive)
    if args.json:
        _print_json(_records(df))
        return 0
    for row in df.itertuples():
        conf = "" if pd.isna(row.confidence_score) else f"{row.confidence_score:.2f}"
        question = for_terminal((row.user_query_text or "")[:60])  # an API client wrote it
        print(f"{row.timestamp:%Y-%m-%d %H:%M:%S}  {row.status:<8} {conf:>5}  "
              f"{question:<60}  {for_terminal(str(row.log_id))}")
    print(f"{len(df)} entries shown", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    with _reader(args) as (reader, _):
        record = reader.get_log(args.log_id)
    if record is None:
        raise InputError(f"No audit entry has log_id {args.log_id!r}; find one with "
                         f"`python -m rag audit list`.")
    _print_json(record)
    return 0


def run_export(args: argparse.Namespace) -> int:
    with _reader(args) as (reader, archive):
        rows = reader.export(_filters(args), args.out, args.format, include_archive=archive)
    print(f"wrote {rows} rows to {args.out}")
    return 0


def run_prune(args: argparse.Namespace) -> int:
    with _store(args) as store:
        rows = store.prune(args.days)
    print(f"deleted {rows} entries older than {args.days} days (hot table and archive)")
    return 0


def run_archive(args: argparse.Namespace) -> int:
    with _store(args) as store:
        rows = store.archive(args.days)
        print(f"moved {rows} entries older than {args.days} days to {store.archive_dir}")
    return 0


def run_sql(args: argparse.Namespace) -> int:
    with _store(args) as store:
        df = store.run_console_query(args.query, max_rows=args.max_rows,
                                     book_id=load_settings().book_id)
    if args.json:
        _print_json(_records(df))
    else:
        shown = df.rename(columns=lambda c: for_terminal(str(c))).map(
            lambda v: for_terminal(v) if isinstance(v, str) else v)
        with pd.option_context("display.max_columns", None, "display.width", 200,
                               "display.max_colwidth", 60):
            print(shown.to_string(index=False))
    if df.attrs.get("truncated"):
        print(f"note: only the first {args.max_rows} rows are shown (--max-rows).",
              file=sys.stderr)
    return 0


def run_flush(args: argparse.Namespace) -> int:
    with _store(args) as store:
        rows = store.flush()
    print(f"imported {rows} spooled entries into {store.db_path}")
    return 0


def _print_json(data: Any) -> None:
    """JSON on stdout with no character a terminal would act on (logged questions come from
    API clients): json escapes C0 itself, rag.audit.safe_text the rest."""
    print(json_for_terminal(json.dumps(data, indent=2, ensure_ascii=False, default=str)))


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in df.to_dict(orient="records")]


def _plain(value: Any) -> Any:
    """JSON-friendly: arrays as lists, NaN/NaT as null."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if value is None or value is pd.NaT or (isinstance(value, float) and pd.isna(value)):
        return None
    return value
