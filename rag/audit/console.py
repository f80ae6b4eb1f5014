"""The reviewers' SQL console: one read-only statement over the audit tables, sandboxed.

Three layers: the statement is checked before it runs (`sql_check`: one statement, SELECT-like,
no file, URL or catalog functions) so the refusal says why; it runs in a child process
(`console_worker`) that cannot write any file (Landlock) and whose address space is capped, on
its own in-memory DuckDB that attaches the audit file READ_ONLY, then disables external access
and locks its configuration; and the parent kills that child at the deadline. Measured: a
normal query ~70 MB peak in the child and 0.2 s; `repeat('x', 1500000000) || …` is stopped at
the memory cap in 0.2 s (it took 49 s and 11.9 GB in-process).
"""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from rag.audit import console_worker
from rag.audit.damage import DAMAGE_MARKERS, AuditDatabaseDamaged, damaged_error
from rag.audit.db import LOCK_MARKERS, SharedDatabase, busy_error, is_lock_error
from rag.audit.filters import archive_files
from rag.audit.pending import PENDING_SELECT, hot_source
from rag.audit.spool import spool_files as list_spool_files
from rag.audit.sql_check import ALLOWED, check_statement, refuse
from rag.errors import AuditError

__all__ = ["ALLOWED", "check_statement", "open_console", "run_console_query", "run_sandboxed",
           "run_store_console"]
MAX_ROWS_LIMIT = 100_000
WORKER_TABLE = "audit.main.audit_logs"  # the table itself, once the view audit_logs shadows it
CONSOLE_MEMORY_MB = 256  # DuckDB memory_limit and the child's address-space headroom
MAX_REPLY_BYTES = 32 << 20  # the pickled rows the parent accepts
START_GRACE_S = 2.0  # child start-up (~0.2 s) and a chance for its own interrupt to land
_NO_FILES = ("The console reads the audit tables only; file, URL and extension access is "
             "refused. Query book_logs, audit_logs, audit_archive or audit_all instead.")
_STOPPED = ("The query {what} and was stopped; narrow it with WHERE or LIMIT, select fewer or "
            "shorter columns, and avoid building huge strings (repeat, lpad, string_agg).")
_MESSAGES = {
    "time": "ran longer than {timeout_s:g} s",
    "memory": f"used more than {CONSOLE_MEMORY_MB} MB of memory",
    "large": f"returned more than {MAX_REPLY_BYTES >> 20} MB of rows",
}


def _request(db_path: Path, archive_dir: Path, wait_s: float, book_id: str | None = None,
             spool_files: list[str] | None = None) -> dict[str, Any]:
    """What the worker needs; with book_id it also defines `book_logs`, that book's rows; with
    spool_files, `audit_logs` also holds their rows not imported yet (rag.audit.pending)."""
    pending = None
    if spool_files:
        pending = {"files": spool_files, "select": PENDING_SELECT,
                   "hot": hot_source(WORKER_TABLE, filename=False)}
    return {"db_path": str(db_path), "archive_files": archive_files(archive_dir),
            "memory_mb": CONSOLE_MEMORY_MB, "wait_s": wait_s, "lock_markers": LOCK_MARKERS,
            "damage_markers": DAMAGE_MARKERS, "book_id": book_id, "pending": pending}


def open_console(db_path: Path, archive_dir: Path, wait_s: float = 0.0,
                 book_id: str | None = None,
                 spool_files: list[str] | None = None) -> duckdb.DuckDBPyConnection:
    """In this process: the worker's DuckDB sandbox, without the process-level limits."""
    try:
        return console_worker.open_sandbox(_request(db_path, archive_dir, wait_s, book_id,
                                                    spool_files))
    except duckdb.Error as e:
        raise _open_error(db_path, e) from e


def _open_error(db_path: Path, error: Exception) -> AuditError:
    if is_lock_error(error):
        return busy_error(db_path, error)
    return AuditError(f"The console cannot open {db_path}: {str(error).splitlines()[0]}")


def run_console_query(db_path: Path, archive_dir: Path, sql: str, max_rows: int = 1000,
                      timeout_s: float = 5.0, wait_s: float = 0.0, book_id: str | None = None,
                      spool_files: list[str] | None = None) -> pd.DataFrame:
    """At most max_rows rows (df.attrs['truncated'] says if there were more) within timeout_s.
    With book_id, the view `book_logs` holds that book's rows (hot and archived)."""
    if not 1 <= max_rows <= MAX_ROWS_LIMIT or not 0 < timeout_s <= 300:
        raise AuditError(f"The row cap must be 1-{MAX_ROWS_LIMIT} and the time limit 0-300 s.")
    check_statement(sql)
    return run_sandboxed(db_path, archive_dir, sql, max_rows, timeout_s, wait_s, book_id,
                         spool_files)


def run_store_console(db: SharedDatabase, spool_dir: Path, archive_dir: Path, sql: str,
                      max_rows: int, timeout_s: float, wait_s: float,
                      book_id: str | None = None) -> pd.DataFrame:
    """run_console_query over an AuditStore's file and spool. A file the worker finds damaged
    is moved aside (rag.audit.damage) and the query run again on the new one."""
    check_statement(sql)

    def run() -> pd.DataFrame:
        with db.connection(wait_s, spool_dir, write=False):
            pass  # migrated, and not damaged when attached: the worker attaches it read-only
        return run_console_query(db.path, archive_dir, sql, max_rows, timeout_s, wait_s,
                                 book_id, list_spool_files(spool_dir))

    try:
        return run()
    except AuditDatabaseDamaged as e:
        if not db.heal(e.__cause__ or e, db.attached):
            raise
    return run()


def run_sandboxed(db_path: Path, archive_dir: Path, sql: str, max_rows: int,
                  timeout_s: float, wait_s: float = 0.0, book_id: str | None = None,
                  spool_files: list[str] | None = None) -> pd.DataFrame:
    """Run sql in the worker process, unchecked (the check is run_console_query's job)."""
    request = dict(_request(db_path, archive_dir, wait_s, book_id, spool_files), sql=sql,
                   max_rows=max_rows, timeout_s=timeout_s, max_reply_bytes=MAX_REPLY_BYTES)
    reply = _run_worker(request, wait_s + timeout_s + START_GRACE_S)
    if reply is None:
        raise AuditError(_STOPPED.format(what=_MESSAGES["time"].format(timeout_s=timeout_s)))
    if reply.get("error") == "damaged":  # the cause says what DuckDB met, for healing
        cause = duckdb.Error(reply["detail"])
        raise damaged_error(db_path, cause) from cause
    if "error" in reply:
        raise _reply_error(reply, db_path, timeout_s)
    rows = reply["rows"]
    frame = pd.DataFrame.from_records(rows[:max_rows], columns=reply["columns"])
    frame.attrs["truncated"] = len(rows) > max_rows
    return frame


def _run_worker(request: dict[str, Any], deadline_s: float) -> dict[str, Any] | None:
    """The worker's reply; None if it was killed at the deadline."""
    # -I: the worker imports duckdb and the standard library only, nothing from the cwd
    proc = subprocess.Popen([sys.executable, "-I", console_worker.__file__],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(json.dumps(request).encode(), timeout=deadline_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if not out:  # killed by the kernel or aborted: an allocation it could not survive
        died = signal.Signals(-proc.returncode).name if proc.returncode < 0 else proc.returncode
        return {"error": "memory", "died": died}
    return pickle.loads(out)  # noqa: S301  (our own child, data only)


def _reply_error(reply: dict[str, Any], db_path: Path, timeout_s: float) -> AuditError:
    code = reply["error"]
    if code in _MESSAGES:
        return AuditError(_STOPPED.format(what=_MESSAGES[code].format(timeout_s=timeout_s)))
    if code == "permission":
        return refuse(_NO_FILES)
    if code == "open":
        error = duckdb.IOException(reply["detail"]) if reply["kind"] == "IOException" else \
            duckdb.Error(reply["detail"])
        return _open_error(db_path, error)
    return AuditError(f"The query failed: {hide_folders(reply['detail'], db_path)}")


def hide_folders(text: str, db_path: Path) -> str:
    """A message without the server's folders: the worker runs in the audit file's folder and
    names what it reads relative to it, but an error may still quote an absolute path."""
    folder = str(db_path.resolve().parent)
    return text.replace(folder + "/", "").replace(folder, ".")
