"""Spool -> DuckDB: transactional batch import, and a read-only snapshot of the spool."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from rag.audit.queries import AuditReader
from rag.audit.schema import COLUMNS, TABLE, apply_migrations
from rag.audit.spool import SEGMENT_SUFFIX, parse_lines, reject_rows

log = logging.getLogger(__name__)
MAX_LINE_BYTES = 64 << 20
REQUIRED = ("log_id", "timestamp", "status", "success")  # NOT NULL in the table
_COMPLETE = " AND ".join(f'"{c}" IS NOT NULL' for c in REQUIRED)
COLUMN_TYPES = dict(COLUMNS)
_REQUIRED_TYPES = {c: COLUMN_TYPES[c] for c in REQUIRED}
# Torn lines (a writer killed mid-line) come back as all-NULL rows and fail _COMPLETE.
_READ = ("read_json(?, format = 'newline_delimited', columns = ?, ignore_errors = true, "
         f"maximum_object_size = {MAX_LINE_BYTES})")


def default_spool_dir(db_path: Path) -> Path:
    return db_path.with_name(f"{db_path.stem}.spool")


def default_archive_dir(db_path: Path) -> Path:
    return db_path.parent / db_path.stem / "archive"


def import_files(con: duckdb.DuckDBPyConnection, paths: list[Path],
                 reject_to: Path | None = None) -> int:
    """One INSERT of every complete row in these spool files; returns the rows added.

    DuckDB parses the JSON lines itself, so the import thread does no per-row Python work and
    does not hold the GIL that request threads need. Torn lines (a writer killed mid-line) are
    skipped; rows missing a required column are copied to the reject file instead.
    """
    files = [str(p) for p in paths]
    written = con.execute(f"INSERT OR IGNORE INTO {TABLE} BY NAME SELECT * FROM {_READ} WHERE "
                          f"{_COMPLETE}", [files, COLUMN_TYPES]).fetchone()[0]
    bad = {r[0] for r in con.execute(f"SELECT log_id FROM {_READ} WHERE log_id IS NOT NULL AND "
                                     f"NOT ({_COMPLETE})", [files, _REQUIRED_TYPES]).fetchall()}
    if bad and reject_to is not None:
        rows = [r for p in paths for r in parse_lines(p.read_bytes()) if r.get("log_id") in bad]
        log.error("audit: %d spooled rows lack required columns; kept in %s", len(rows),
                  reject_to)
        reject_rows(reject_to, rows)
    return int(written)


def commit_files(con: duckdb.DuckDBPyConnection, paths: list[Path], spool_dir: Path) -> int:
    """import_files in its own transaction."""
    con.begin()
    try:
        written = import_files(con, paths, spool_dir)
        con.commit()
        return written
    except BaseException:
        con.rollback()
        raise


class SpoolSnapshot(AuditReader):
    """Spooled rows in an in-memory DuckDB: readable while another process holds the file."""

    def __init__(self, db_path: Path, spool_dir: Path | None = None) -> None:
        db_path = Path(db_path)
        spool_dir = Path(spool_dir) if spool_dir else default_spool_dir(db_path)
        self.archive_dir = default_archive_dir(db_path)
        self._con = duckdb.connect(":memory:")
        apply_migrations(self._con)
        files = sorted(spool_dir.glob(f"*{SEGMENT_SUFFIX}")) if spool_dir.is_dir() else []
        self.entries = import_files(self._con, files) if files else 0
        self._lock = threading.Lock()

    @contextmanager
    def _reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            yield self._con

    def close(self) -> None:
        self._con.close()
