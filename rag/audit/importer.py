"""Spool -> DuckDB: transactional batch import, and a read-only snapshot of the spool."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from rag.audit.damage import DAMAGE_ERRORS, damaged_error, is_damage
from rag.audit.db import ATTACHED, SharedDatabase
from rag.audit.quarantine import decode_lines, quarantine_lines
from rag.audit.queries import AuditReader
from rag.audit.schema import COLUMNS, TABLE, apply_migrations
from rag.audit.spool import (
    Segment,
    claim_segments,
    release,
    spool_files,
)

log = logging.getLogger(__name__)
STAGED = "temp.main._audit_import"  # spool lines parsed, about to be inserted (`why` NULL)
REQUIRED = ("log_id", "timestamp", "status", "success")  # NOT NULL in the table
COMPLETE = " AND ".join(f'"{c}" IS NOT NULL' for c in REQUIRED)
MAX_BATCH_BYTES = 64 << 20  # spool bytes per INSERT
MAX_SEGMENT_BYTES = 256 << 20  # a writer seals every 0.5 s: no segment of ours comes near
_STRUCT = "{" + ", ".join(f'"{name}": "{kind}"' for name, kind in COLUMNS) + "}"
_ROW_COMPLETE = " AND ".join(f'row."{c}" IS NOT NULL' for c in REQUIRED)


def spool_rows(source: str) -> str:
    """Every line of `source` (a relation of filename, content) as a typed row plus its
    filename, for reads (rag.audit.pending): a line that is no JSON is skipped (the importer
    quarantines it), a value of the wrong type reads as NULL."""
    return (f"(SELECT row.*, filename FROM (SELECT filename, json_transform(line, '{_STRUCT}') "
            f"AS row FROM (SELECT filename, unnest(string_split(content, chr(10))) AS line "
            f"FROM {source}) WHERE json_valid(line)))")


def parsed_lines(source: str) -> str:
    """Every non-blank line of `source` (filename, content) with its number: `row` typed when
    it is a complete audit row, else `why` it is not and the `line` itself (to quarantine)."""
    lines = (f"SELECT filename, generate_subscripts(lines, 1) AS line_no, unnest(lines) AS line, "
             f"len(lines) AS last FROM (SELECT filename, string_split(content, chr(10)) AS "
             f"lines FROM {source})")
    typed = (f"SELECT *, CASE WHEN json_valid(line) AND json_type(line) = 'OBJECT' THEN "
             f"json_transform(line, '{_STRUCT}') END AS row FROM ({lines}) "
             f"WHERE trim(line) <> ''")
    judged = (f"SELECT *, CASE WHEN row IS NOT NULL AND {_ROW_COMPLETE} THEN NULL "
              f"WHEN row IS NOT NULL THEN 'lacks log_id, timestamp, status or success' "
              f"WHEN json_valid(line) THEN 'not a JSON object' "
              f"WHEN line_no = last THEN 'torn: the writer stopped mid-line' "
              f"ELSE 'not valid JSON' END AS why FROM ({typed})")
    return (f"SELECT filename, line_no, why, CASE WHEN why IS NOT NULL THEN line END AS line, "
            f"CASE WHEN why IS NULL THEN row END AS row FROM ({judged})")


# The segment files in `?`. DuckDB parses the lines itself (no per-row Python work, no GIL taken
# from request threads). read_text + json_transform: ~20 ms for 300 rows of 5 KB in 1 file or
# in 30, where read_json costs 4 ms more per file, and a busy spool holds many small segments.
FILE_LINES = parsed_lines("read_text(?)")
# Texts already read: `?` the file names, `?` their new complete lines (rag.audit.pending).
TEXTS = "(SELECT unnest(?::VARCHAR[]) AS filename, unnest(?::VARCHAR[]) AS content)"
TEXT_ROWS = spool_rows(TEXTS)
TEXT_LINES = parsed_lines(TEXTS)


def default_spool_dir(db_path: Path) -> Path:
    return db_path.with_name(f"{db_path.stem}.spool")


def default_archive_dir(db_path: Path) -> Path:
    return db_path.parent / db_path.stem / "archive"


def stage_files(con: duckdb.DuckDBPyConnection, paths: list[Path],
                quarantine_to: Path | None = None) -> int:
    """Parse every line of these spool files into STAGED; returns the rows staged.

    Needs no audit file attached, so an import holds the file only for its INSERT. A line that
    is no complete row (torn, foreign bytes, not UTF-8, lacking a required column) is copied to
    the quarantine folder under quarantine_to with a log line, and the rest imported, so one bad
    line never stops an import (it did, for good, before: read_text refuses a file that is not
    UTF-8 throughout).
    """
    bad: dict[str, list[tuple[int, bytes, str]]] = {}
    try:
        con.execute(f"CREATE OR REPLACE TEMP TABLE _audit_import AS {FILE_LINES}",
                    [[str(p) for p in paths]])
    except duckdb.InvalidInputException:  # a file that is not UTF-8 throughout
        names, texts = [], []
        for path in paths:
            text, lines = decode_lines(path.read_bytes())
            names.append(str(path))
            texts.append(text)
            bad.setdefault(str(path), []).extend(lines)
        con.execute(f"CREATE OR REPLACE TEMP TABLE _audit_import AS {TEXT_LINES}", [names, texts])
    for name, number, why, line in con.execute(
            f"SELECT filename, line_no, why, line FROM {STAGED} WHERE why IS NOT NULL").fetchall():
        bad.setdefault(name, []).append((number, line.encode("utf-8"), why))
    if quarantine_to is not None:
        for name, lines in bad.items():
            if lines:
                quarantine_lines(quarantine_to, name, lines)
    return int(con.execute(f"SELECT count(*) FROM {STAGED} WHERE why IS NULL").fetchone()[0])


def insert_staged(con: duckdb.DuckDBPyConnection, table: str = TABLE) -> int:
    """One INSERT OR IGNORE of the staged rows (the log_id key drops any already stored)."""
    written = con.execute(f"INSERT OR IGNORE INTO {table} BY NAME SELECT row.* FROM {STAGED} "
                          "WHERE why IS NULL").fetchone()[0]
    con.execute(f"DROP TABLE {STAGED}")
    return int(written)


def import_files(con: duckdb.DuckDBPyConnection, paths: list[Path],
                 quarantine_to: Path | None = None) -> int:
    """Stage and insert these spool files; returns the rows added."""
    stage_files(con, paths, quarantine_to)
    return insert_staged(con)


def commit_staged(con: duckdb.DuckDBPyConnection, table: str = TABLE) -> int:
    """insert_staged in its own transaction."""
    con.begin()
    try:
        written = insert_staged(con, table)
        con.commit()
        return written
    except BaseException:
        try:
            con.rollback()
        except duckdb.TransactionException:
            pass  # a failed COMMIT ends the transaction itself: keep its error, not this one
        raise


def import_spool(db: SharedDatabase, spool_dir: Path, wait_s: float) -> int:
    """Import every segment no live writer holds (sealed, or left by a killed process) in
    groups: parse with the file detached, attach it for the INSERT only, and delete a group's
    segments once committed and before detaching, so no reader finds a row in neither place.
    A repeated import (killed between commit and delete) is harmless: log_id is the key."""
    claimed = claim_segments(spool_dir, MAX_SEGMENT_BYTES)
    written = 0
    try:
        while claimed:
            group, size = [], 0
            while claimed and (not group or size + claimed[0].size <= MAX_BATCH_BYTES):
                group.append(claimed.pop(0))
                size += group[-1].size
            try:
                written += _import_group(db, group, spool_dir, wait_s)
            except BaseException:
                claimed[:0] = group  # released below, kept for the next try
                raise
        return written
    finally:
        release(claimed, delete=False)


def _import_group(db: SharedDatabase, group: list[Segment], spool_dir: Path,
                  wait_s: float) -> int:
    """Insert the group; a file whose blocks turn out damaged only at the insert is moved aside
    and the group inserted into the new one."""
    written, damage, identity = _insert_group(db, group, spool_dir, wait_s)
    if damage is not None and db.heal(damage, identity):
        written, damage, _ = _insert_group(db, group, spool_dir, wait_s)
    if damage is not None:
        db.close()
        raise damaged_error(db.path, damage, spool_dir) from damage
    return written


def _insert_group(db: SharedDatabase, group: list[Segment], spool_dir: Path, wait_s: float
                  ) -> tuple[int, duckdb.Error | None, tuple[int, int] | None]:
    """Stage, attach, insert, delete the segments: (rows written, the damage met instead, the
    identity of the file it was met in)."""
    staging = db.staging()
    stage_files(staging, [s.path for s in group], spool_dir)
    with db.connection(wait_s, spool_dir):
        try:
            written = commit_staged(staging, f"{ATTACHED}.main.{TABLE}")
        except duckdb.Error as e:  # attached, but blocks past a truncation are gone
            if not (isinstance(e, DAMAGE_ERRORS) or is_damage(e)):
                raise
            return 0, e, db.attached
        release(group, delete=True)
        return written, None, db.attached


class SpoolSnapshot(AuditReader):
    """Spooled rows in an in-memory DuckDB: readable while another process holds the file."""

    def __init__(self, db_path: Path, spool_dir: Path | None = None) -> None:
        db_path = Path(db_path)
        spool_dir = Path(spool_dir) if spool_dir else default_spool_dir(db_path)
        self.archive_dir = default_archive_dir(db_path)
        self._con = duckdb.connect(":memory:")
        apply_migrations(self._con)
        files = [Path(f) for f in spool_files(spool_dir)]
        self.entries = import_files(self._con, files) if files else 0
        self._lock = threading.Lock()

    @contextmanager
    def _reading(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._lock:
            yield self._con

    def close(self) -> None:
        self._con.close()
