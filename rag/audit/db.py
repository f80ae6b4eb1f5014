"""One DuckDB connection per audit file per process, opened on demand and released when idle.

Releasing the file when idle lets a second Folio process (the CLI, another app replica) open it
between bursts; while one process holds it, the others keep answering into their spools.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from rag.errors import AuditError

LOCK_POLL_S = 0.1
LOCK_MARKERS = ("could not set lock", "conflicting lock")


# What a truncated or overwritten file raises: on open, on the first read, or on an insert.
DAMAGE_ERRORS = (duckdb.IOException, duckdb.TransactionException, duckdb.FatalException,
                 duckdb.InternalException, duckdb.SerializationException)


class AuditDatabaseBusy(AuditError):
    """Another process holds the audit database file; entries wait in the spool meanwhile."""


class AuditDatabaseDamaged(AuditError):
    """The audit file cannot be read (truncated, overwritten); entries wait in the spool."""


def is_lock_error(error: Exception) -> bool:
    return isinstance(error, duckdb.IOException) and any(
        m in str(error).lower() for m in LOCK_MARKERS)


def busy_error(path: Path, error: Exception, spool_dir: Path | None = None) -> AuditDatabaseBusy:
    pid = re.search(r"PID (\d+)", str(error))
    holder = f" (PID {pid.group(1)})" if pid else ""
    spool = f" in {spool_dir}" if spool_dir else ""
    return AuditDatabaseBusy(
        f"the audit database {path} is in use by another Folio process{holder}; new answers "
        f"are kept in the spool{spool} and written once it is free. Stop that process or wait "
        f"until it goes idle, then try again (or set RAG_AUDIT_DB to another file).")


def damaged_error(path: Path, error: Exception,
                  spool_dir: Path | None = None) -> AuditDatabaseDamaged:
    spool = f" ({spool_dir})" if spool_dir else ""
    return AuditDatabaseDamaged(
        f"The audit file {path} is damaged ({str(error).splitlines()[0]}); move it aside, e.g. "
        f"`mv {path} {path}.broken`; answers are kept in the spool{spool} and will be imported "
        f"into a new file.")


def connect(path: Path, wait_s: float, spool_dir: Path | None = None,
            **kwargs: object) -> duckdb.DuckDBPyConnection:
    """duckdb.connect that waits up to wait_s for another process to let go of the file."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return duckdb.connect(str(path), **kwargs)
        except duckdb.Error as e:
            # not ours at all (RAG_AUDIT_DB pointing at another file): a setting to fix
            if any(m in str(e).lower() for m in ("permission denied", "not a valid duckdb")):
                raise AuditError(f"The audit database {path} cannot be opened ({e}); move it "
                                 f"aside or set RAG_AUDIT_DB to another file.") from e
            if not is_lock_error(e):
                raise damaged_error(path, e, spool_dir) from e
            if time.monotonic() >= deadline:
                raise busy_error(path, e, spool_dir) from e
        time.sleep(LOCK_POLL_S)


class SharedDatabase:
    """The process-wide connection to one audit file, shared by every AuditStore on it."""

    _registry: dict[str, SharedDatabase] = {}
    _registry_lock = threading.Lock()

    def __init__(self, path: Path, prepare: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        self.path = path
        self.lock = threading.RLock()  # DuckDB connections are not for concurrent use
        self._prepare = prepare
        self._con: duckdb.DuckDBPyConnection | None = None
        self._last_used = 0.0
        self.users = 0

    @classmethod
    def acquire(cls, path: Path,
                prepare: Callable[[duckdb.DuckDBPyConnection], None]) -> SharedDatabase:
        key = str(path.resolve())
        with cls._registry_lock:
            shared = cls._registry.setdefault(key, SharedDatabase(path, prepare))
            shared.users += 1
            return shared

    def release(self) -> None:
        with SharedDatabase._registry_lock:
            self.users -= 1
            if self.users <= 0:
                SharedDatabase._registry.pop(str(self.path.resolve()), None)
                self.close()

    @contextmanager
    def connection(self, wait_s: float,
                   spool_dir: Path | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        with self.lock:
            if self._con is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                con = connect(self.path, wait_s, spool_dir)
                try:
                    self._prepare(con)
                except DAMAGE_ERRORS as e:  # it opened, but its blocks cannot be read
                    con.close()
                    raise damaged_error(self.path, e, spool_dir) from e
                except BaseException:
                    con.close()
                    raise
                self._con = con
            try:
                yield self._con
            finally:
                self._last_used = time.monotonic()

    def close_if_idle(self, idle_s: float) -> None:
        if self._con is None or not self.lock.acquire(blocking=False):
            return
        try:
            if self._con is not None and time.monotonic() - self._last_used >= idle_s:
                self.close()
        finally:
            self.lock.release()

    def close(self) -> None:
        with self.lock:
            if self._con is not None:
                self._con.close()
                self._con = None
