"""Spooled rows not imported yet, read beside the table: every reader sees every answer.

An answer must be visible the moment record() returns, whichever process holds the file and
whether or not anyone has imported it yet. So a read loads every spool segment (sealed, or still
being appended to by a live writer) into a temp table of its own in-memory DuckDB and queries
`HOT_SOURCE`: the table plus the spooled rows it does not hold yet. A row is in one or the other
at any instant (a segment is deleted only after its rows committed, and the log_id anti-join
drops a committed segment not deleted yet), so the union holds each answer exactly once.

Segments only grow, so each read parses just the complete lines added since the last one (a
torn last line waits for its end); rows of a segment that went (imported) are dropped.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from rag.audit.importer import COMPLETE, TEXT_ROWS
from rag.audit.quarantine import decode_lines
from rag.audit.schema import COLUMNS, TABLE
from rag.audit.spool import spool_files

PENDING = "temp.main._audit_pending"
# The console's: texts the worker read (`?` segment names, `?` texts), without the file name,
# which would show a server path in the console.
PENDING_SELECT = f"SELECT * EXCLUDE (filename) FROM {TEXT_ROWS} WHERE {COMPLETE}"
_MEMO = "pending_files"  # in the connection's scratch memo: {segment: (inode, bytes parsed)}
_CREATE = ("CREATE OR REPLACE TEMP TABLE _audit_pending ("
           + ", ".join(f'"{name}" {kind}' for name, kind in COLUMNS) + ", filename VARCHAR)")


def hot_source(table: str = TABLE, filename: bool = True) -> str:
    """The table plus the pending rows it does not hold (one per log_id: a segment copied by a
    killed importer repeats rows); `filename`: whether PENDING has that column. The timestamp
    bound lets DuckDB skip the table's older row groups, pending rows being recent."""
    rows = "* EXCLUDE (filename)" if filename else "*"
    return (f"(SELECT * FROM {table} UNION ALL BY NAME SELECT DISTINCT ON (log_id) {rows} "
            f"FROM {PENDING} WHERE log_id NOT IN (SELECT log_id FROM {table} WHERE "
            f'"timestamp" >= (SELECT min("timestamp") FROM {PENDING})))')


HOT_SOURCE = hot_source()


def _new_lines(path: str, inode: int | None,
               offset: int) -> tuple[int, int, bytes, bool] | None:
    """(inode, offset after the last complete line, the complete lines after `offset`, whether
    the file was replaced and so read from its start); None if the segment is gone."""
    try:
        stat = os.stat(path)
        if stat.st_ino == inode and stat.st_size == offset:
            return inode, offset, b"", False  # unchanged: a sealed segment, read before
        with open(path, "rb") as f:
            stat = os.fstat(f.fileno())
            replaced = offset > 0 and (stat.st_ino != inode or stat.st_size < offset)
            if replaced or stat.st_ino != inode:
                offset = 0
            f.seek(offset)
            data = f.read()
    except FileNotFoundError:
        return None
    end = data.rfind(b"\n") + 1
    return stat.st_ino, offset + end, data[:end], replaced


def refresh_pending(con: duckdb.DuckDBPyConnection, spool_dir: Path,
                    scratch: dict[str, object]) -> None:
    """Bring PENDING up to date with the spool. `scratch` is the connection's memo, emptied
    when its temp tables go."""
    loaded = scratch.pop(_MEMO, None)  # put back only once the table matches it again
    if not isinstance(loaded, dict):
        con.execute(_CREATE)
        loaded = {}
    now: dict[str, tuple[int, int]] = {}
    names, texts, replaced = [], [], []
    for path in spool_files(spool_dir):
        read = _new_lines(path, *loaded.get(path, (None, 0)))
        if read is None:
            continue
        now[path] = read[:2]
        if read[3]:
            replaced.append(path)  # its old rows go before it is read again
        if read[2]:
            names.append(path)
            texts.append(decode_lines(read[2])[0])  # a line not UTF-8 waits for quarantine
    gone = [path for path in loaded if path not in now] + replaced
    if gone:
        con.execute(f"DELETE FROM {PENDING} WHERE list_contains(?, filename)", [gone])
    if texts:
        con.execute(f"INSERT INTO {PENDING} BY NAME SELECT * FROM {TEXT_ROWS} WHERE {COMPLETE}",
                    [names, texts])
    scratch[_MEMO] = now
