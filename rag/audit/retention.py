"""Retention: archive old rows to monthly Parquet files, prune rows past the full-trail limit.

Archiving writes each month to `<file>.parquet.tmp`, then deletes the rows and records the file in
`_audit_archive_files` in one transaction, and only then renames the file into place. On open,
a leftover `.tmp` is renamed when its manifest entry committed and deleted when it did not, so a
crash at any point neither loses nor duplicates rows.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb

from rag.audit.filters import archive_files
from rag.audit.schema import ARCHIVE_FILES_TABLE, TABLE
from rag.audit.spool import fsync_path
from rag.errors import InputError

TEMP_SUFFIX = ".tmp"
PRUNE_SUFFIX = ".prune"  # a pruned rewrite; the original stays valid until os.replace
_MONTH_DIR = re.compile(r"year=(\d{4})/month=(\d{2})")


def cutoff_for(days: int) -> datetime:
    """Now (UTC) minus `days`; the CLI and the pages pass user input here."""
    if isinstance(days, bool) or not isinstance(days, int) or days < 0:
        raise InputError(f"--older-than must be a whole number of days, 0 or more; got {days!r}.")
    return _utc_now() - timedelta(days=days)


def _utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _relative(path: Path, archive_dir: Path) -> str:
    return path.relative_to(archive_dir).as_posix()


def _next_month(start: datetime) -> datetime:
    return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)


def _months_before(con: duckdb.DuckDBPyConnection, cutoff: datetime) -> list[datetime]:
    rows = con.execute(f"""SELECT DISTINCT date_trunc('month', "timestamp") FROM {TABLE}
                           WHERE "timestamp" < ? ORDER BY 1""", [cutoff]).fetchall()
    return [r[0] for r in rows]


def archive_rows(con: duckdb.DuckDBPyConnection, archive_dir: Path, cutoff: datetime) -> int:
    """Move rows older than cutoff to year=YYYY/month=MM/*.parquet; returns the rows moved."""
    months = _months_before(con, cutoff)
    if not months:
        return 0
    stamp = f"part-{time.time_ns()}-{uuid.uuid4().hex[:8]}.parquet"
    moves: list[tuple[Path, Path]] = []
    con.begin()
    try:
        for start in months:
            final = archive_dir / f"year={start.year:04d}" / f"month={start.month:02d}" / stamp
            temp = final.with_name(final.name + TEMP_SUFFIX)
            final.parent.mkdir(parents=True, exist_ok=True)
            moves.append((temp, final))
            rows = con.execute(
                f'COPY (SELECT * FROM {TABLE} WHERE "timestamp" >= ? AND "timestamp" < ? '
                f'ORDER BY "timestamp", log_id) TO {_literal(temp)} '
                f"(FORMAT parquet, COMPRESSION zstd)",
                [start, min(_next_month(start), cutoff)]).fetchone()[0]
            fsync_path(temp)
            con.execute(f"INSERT INTO {ARCHIVE_FILES_TABLE} VALUES (?, ?, ?)",
                        [_relative(final, archive_dir), rows, _utc_now()])
        moved = con.execute(f'DELETE FROM {TABLE} WHERE "timestamp" < ?', [cutoff]).fetchone()[0]
        con.commit()
    except BaseException:
        con.rollback()
        for temp, _ in moves:
            temp.unlink(missing_ok=True)
        raise
    for temp, final in moves:
        os.replace(temp, final)
    return int(moved)


def recover_archive(con: duckdb.DuckDBPyConnection, archive_dir: Path) -> None:
    """Finish or undo an archive run that was interrupted between its commit and its renames."""
    for temp in archive_dir.glob(f"year=*/month=*/*.parquet{TEMP_SUFFIX}"):
        final = temp.with_name(temp.name.removesuffix(TEMP_SUFFIX))
        known = con.execute(f"SELECT count(*) FROM {ARCHIVE_FILES_TABLE} WHERE path = ?",
                            [_relative(final, archive_dir)]).fetchone()[0]
        if known:
            os.replace(temp, final)
        else:
            temp.unlink()
    for temp in archive_dir.glob(f"year=*/month=*/*.parquet{PRUNE_SUFFIX}"):
        temp.unlink()


def prune_rows(con: duckdb.DuckDBPyConnection, archive_dir: Path, cutoff: datetime) -> int:
    """Delete rows older than cutoff from the hot table and the archive; returns the count."""
    deleted = con.execute(f'DELETE FROM {TABLE} WHERE "timestamp" < ?', [cutoff]).fetchone()[0]
    for name in archive_files(archive_dir):
        month = _MONTH_DIR.search(Path(name).as_posix())
        if month and datetime(int(month[1]), int(month[2]), 1) >= cutoff:
            continue
        deleted += _prune_file(con, archive_dir, Path(name), cutoff)
    return int(deleted)


def _prune_file(con: duckdb.DuckDBPyConnection, archive_dir: Path, path: Path,
                cutoff: datetime) -> int:
    total, old = con.execute('SELECT count(*), count_if("timestamp" < ?) FROM read_parquet(?)',
                             [cutoff, str(path)]).fetchone()
    relative = _relative(path, archive_dir)
    if old == 0:
        return 0
    if old == total:
        con.execute(f"DELETE FROM {ARCHIVE_FILES_TABLE} WHERE path = ?", [relative])
        path.unlink()
        _remove_empty(path.parent)
        return int(old)
    temp = path.with_name(path.name + PRUNE_SUFFIX)
    con.execute(f'COPY (SELECT * FROM read_parquet(?) WHERE "timestamp" >= ?) TO {_literal(temp)} '
                f"(FORMAT parquet, COMPRESSION zstd)", [str(path), cutoff])
    fsync_path(temp)
    con.execute(f"UPDATE {ARCHIVE_FILES_TABLE} SET rows = ? WHERE path = ?",
                [total - old, relative])
    os.replace(temp, path)
    return int(old)


def _remove_empty(folder: Path) -> None:
    for path in (folder, folder.parent):
        try:
            path.rmdir()
        except OSError:
            return
