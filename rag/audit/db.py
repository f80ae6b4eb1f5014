"""The audit file, attached for one operation at a time, so several processes can share it.

DuckDB lets one process at a time write a file, and a process that keeps it open shuts every
other one out. So no Folio process keeps it: each holds a private in-memory DuckDB and ATTACHes
the file for one import or one read, then DETACHes it (measured: 2 ms to attach and detach,
against 20-25 ms to start a DuckDB instance; an import of 20 rows into a 326k-row file holds it
~50 ms). Reads attach READ_ONLY, so readers in several processes share the file; an import
excludes them briefly, and whoever finds the file taken polls for up to wait_s.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from rag.audit.damage import (
    DAMAGE_ERRORS,
    AuditDatabaseDamaged,
    damaged_error,
    file_identity,
    is_damage,
    move_aside,
)
from rag.errors import AuditError

LOCK_POLL_S = 0.01  # plus up to as much again at random, so two pollers do not keep colliding
LOCK_MARKERS = ("could not set lock", "conflicting lock")
ATTACHED = "audit_file"  # the file's catalog name inside the private in-memory DuckDB
READ, WRITE = "read", "write"
Hook = Callable[[duckdb.DuckDBPyConnection], object]



class AuditDatabaseBusy(AuditError):
    """Another process holds the audit database file; entries wait in the spool meanwhile."""


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


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def attach(con: duckdb.DuckDBPyConnection, path: Path, wait_s: float, read_only: bool,
           spool_dir: Path | None = None) -> None:
    """ATTACH the file as ATTACHED, polling up to wait_s while another process holds it."""
    options = " (READ_ONLY)" if read_only else ""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            con.execute(f"ATTACH {_literal(path)} AS {ATTACHED}{options}")
            con.execute(f"USE {ATTACHED}")
            return
        except duckdb.Error as e:
            if "permission denied" in str(e).lower():  # a setting to fix, not damage
                raise AuditError(f"The audit database {path} cannot be opened ({e}); fix its "
                                 f"permissions or set RAG_AUDIT_DB to another file.") from e
            if not is_lock_error(e):
                raise damaged_error(path, e, spool_dir) from e
            if time.monotonic() >= deadline:
                raise busy_error(path, e, spool_dir) from e
        time.sleep(LOCK_POLL_S * (1 + random.random()))


class SharedDatabase:
    """The process-wide handle on one audit file, shared by every AuditStore on it.

    connection() attaches the file and detaches it when the outermost block ends. `prepare`
    (migrations) runs on the first attach of each file (a file moved aside and recreated is a
    new one), which attaches it for writing even for a read; `recover` (finishing a killed
    archiver's renames) runs on every attach for writing."""

    _registry: dict[str, SharedDatabase] = {}
    _registry_lock = threading.Lock()

    def __init__(self, path: Path, prepare: Hook, recover: Hook) -> None:
        self.path = path
        self.lock = threading.RLock()  # DuckDB connections are not for concurrent use
        self._prepare, self._recover = prepare, recover
        self._con: duckdb.DuckDBPyConnection | None = None
        self._staging: duckdb.DuckDBPyConnection | None = None
        self._mode = ""  # "", READ or WRITE: how the file is attached right now
        self._depth = 0
        self._prepared: tuple[int, int] | None = None
        self.attached: tuple[int, int] | None = None  # the identity of the file last attached
        self.moved_aside: Path | None = None  # the last damaged file this process moved aside
        self.scratch: dict[str, object] = {}  # state tied to the in-memory DuckDB's temp tables
        self.users = 0

    @classmethod
    def acquire(cls, path: Path, prepare: Hook, recover: Hook) -> SharedDatabase:
        key = str(path.resolve())
        with cls._registry_lock:
            shared = cls._registry.setdefault(key, SharedDatabase(path, prepare, recover))
            shared.users += 1
            return shared

    def release(self) -> None:
        with SharedDatabase._registry_lock:
            self.users -= 1
            if self.users <= 0:
                SharedDatabase._registry.pop(str(self.path.resolve()), None)
                self.close()

    def memory(self) -> duckdb.DuckDBPyConnection:
        """The private in-memory DuckDB (hold `lock`); the file may or may not be attached."""
        with self.lock:
            if self._con is None:
                self._con = duckdb.connect(":memory:")
                self.scratch.clear()
            return self._con

    def staging(self) -> duckdb.DuckDBPyConnection:
        """A second connection to the in-memory DuckDB, for the importer alone (hold its own
        lock, not `lock`): parsing a backlog there does not stall this process's reads. It sees
        the file while someone holds `lock` with it attached (`ATTACHED.main.audit_logs`)."""
        with self.lock:
            if self._staging is None:
                self._staging = self.memory().cursor()
            return self._staging

    @contextmanager
    def connection(self, wait_s: float, spool_dir: Path | None = None,
                   write: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """The file attached (READ_ONLY unless write) for the length of the block."""
        with self.lock:
            if self._depth == 0:
                self._attach(wait_s, spool_dir, write)
            elif write and self._mode == READ:
                raise RuntimeError("an audit write cannot nest inside a read")
            self._depth += 1
            try:
                yield self.memory()
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._detach()

    def _attach(self, wait_s: float, spool_dir: Path | None, write: bool) -> None:
        """Attach; a damaged file is moved aside (rag.audit.damage) and a new one attached."""
        identity = file_identity(self.path)
        try:
            self._attach_once(identity, wait_s, spool_dir, write)
        except AuditDatabaseDamaged as e:
            if not self.heal(e.__cause__ or e, identity):
                raise
            self._attach_once(file_identity(self.path), wait_s, spool_dir, write)

    def _attach_once(self, identity: tuple[int, int] | None, wait_s: float,
                     spool_dir: Path | None, write: bool) -> None:
        con = self.memory()
        prepare = identity is None or identity != self._prepared
        if prepare:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        attach(con, self.path, wait_s, not (write or prepare), spool_dir)
        self.attached = identity
        self._mode = WRITE if write or prepare else READ
        if self._mode == READ:
            return
        try:
            if prepare:
                self._prepare(con)
            self._recover(con)
        except duckdb.Error as e:  # it attached, but its blocks cannot be read
            self._detach()
            if isinstance(e, DAMAGE_ERRORS) or is_damage(e):
                raise damaged_error(self.path, e, spool_dir) from e
            raise
        except BaseException:
            self._detach()
            raise
        self._prepared = self.attached = file_identity(self.path)

    def heal(self, error: BaseException, identity: tuple[int, int] | None) -> bool:
        """After `error` on the file that had `identity`: move it aside if it is damaged. True
        when the next attach finds another file (moved here, or by another process)."""
        with self.lock:  # the file is detached by now (_detach drops an instance it broke)
            moved = move_aside(self.path, identity, error)
            if moved is not None:
                self.moved_aside = moved
            return moved is not None or (identity is not None
                                         and file_identity(self.path) != identity)

    def _detach(self) -> None:
        if not self._mode or self._con is None:
            self._mode = ""
            return
        try:
            self._con.execute("USE memory")
            self._con.execute(f"DETACH {ATTACHED}")
        except duckdb.Error:
            self._drop()  # closing the instance lets go of the file whatever state it is in
        finally:
            self._mode = ""

    def _drop(self) -> None:
        cons, self._con, self._staging = (self._staging, self._con), None, None
        self.scratch.clear()
        for con in cons:
            try:
                if con is not None:
                    con.close()
            except duckdb.Error:
                pass

    def close(self) -> None:
        """Let go of the file and the in-memory DuckDB; the next connection() starts afresh."""
        with self.lock:
            self._mode = ""  # an enclosing connection() block finds nothing left to detach
            self._drop()
