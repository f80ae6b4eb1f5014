"""A damaged audit file: told apart from a busy one, and moved aside so a new one can start.

A zero-byte, overwritten, truncated or checksum-corrupt `audit.duckdb` used to stop `rag ask`
and `rag serve` from starting, or crash `rag audit stats` with `_duckdb.Error`, until someone
moved it by hand. Now whichever process meets the damage first renames the file (and its WAL)
to `<name>.damaged-<UTC time>`, never deleting it, and attaches a new one; answers never
stopped flowing, as they wait in the spool, which the new file imports.

DuckDB raises these as IOException (short reads, "not a valid DuckDB database file", which is
also how it says "permission denied") or as its base Error (checksums), with no code to tell
them apart, so its messages are matched here, once, in lower case.
"""

from __future__ import annotations

import fcntl
import logging
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from rag.errors import AuditError

log = logging.getLogger(__name__)
# What a truncated or overwritten file raises: on open, on the first read, or on an insert.
DAMAGE_ERRORS = (duckdb.IOException, duckdb.TransactionException, duckdb.FatalException,
                 duckdb.InternalException, duckdb.SerializationException)
# DuckDB's words for a file whose bytes are wrong: only these are moved aside. Anything else
# (a lock, a permission, a version from a newer DuckDB) is a state or a setting to fix.
DAMAGE_MARKERS = ("not a valid duckdb database file", "corrupt database file",
                  "could not read enough bytes", "does not match stored checksum")
NOT_YET_WRITTEN_S = 10.0  # a file DuckDB is creating is empty for microseconds, not seconds
SUFFIX = ".damaged-"


class AuditDatabaseDamaged(AuditError):
    """The audit file cannot be read (truncated, overwritten); entries wait in the spool."""


def is_damage(error: BaseException) -> bool:
    """True when DuckDB says the file's bytes are wrong (not when it is locked or forbidden)."""
    return isinstance(error, duckdb.Error) and any(m in str(error).lower()
                                                   for m in DAMAGE_MARKERS)


def damaged_error(path: Path, error: BaseException,
                  spool_dir: Path | None = None) -> AuditDatabaseDamaged:
    spool = f" ({spool_dir})" if spool_dir else ""
    return AuditDatabaseDamaged(
        f"The audit file {path} is damaged ({str(error).splitlines()[0]}); move it aside, e.g. "
        f"`mv {path} {path}.broken`; answers are kept in the spool{spool} and will be imported "
        f"into a new file.")


def file_identity(path: Path) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino


def _being_created(path: Path) -> bool:
    """An empty or header-less file modified seconds ago may be one DuckDB is creating."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        return False
    return stat.st_size < 3 * 4096 and time.time() - stat.st_mtime < NOT_YET_WRITTEN_S


def move_aside(path: Path, identity: tuple[int, int] | None,
               error: BaseException) -> Path | None:
    """Rename the damaged file (and its WAL, which must not replay into the new one) to
    `<name>.damaged-<UTC time>`; the new name, or None when the file at `path` is no longer the
    one found damaged (another process moved it first) or may still be being created.

    The folder is flocked while it looks and renames, so two processes that both met the damage
    move it once, and never the new file the first one started."""
    if identity is None or not is_damage(error) or _being_created(path):
        return None
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(folder, fcntl.LOCK_EX)
        if file_identity(path) != identity:
            return None
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = path.with_name(f"{path.name}{SUFFIX}{stamp}")
        wal = path.with_name(f"{path.name}.wal")
        if wal.exists():
            os.rename(wal, target.with_name(f"{target.name}.wal"))
        os.rename(path, target)
        os.fsync(folder)
    finally:
        os.close(folder)  # releases the flock
    log.warning("The audit file %s was damaged (%s); it was moved to %s (kept: nothing in it "
                "was deleted) and a new audit file was started. Answers waiting in the spool "
                "are imported into the new file.", path, str(error).splitlines()[0], target)
    return target
