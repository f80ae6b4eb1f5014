"""Append-only spool of audit rows: one JSON line per answer, on disk before record() returns.

Each process appends to its own segment file and holds an exclusive flock on it while it is
active. An importer claims a segment by taking that lock, so it only ever imports segments whose
writer has sealed them or died (a SIGKILL releases the lock); segments are deleted only after the
rows are committed, and the log_id primary key makes a repeated import harmless.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG

from rag.audit.quarantine import quarantine_entry
from rag.errors import AuditError

log = logging.getLogger(__name__)
SEGMENT_SUFFIX = ".jsonl"
STALE_NEW_S = 60.0  # a segment is renamed from .new within microseconds of its creation


@dataclass
class Segment:
    path: Path
    fd: int
    size: int = 0


def fsync_path(path: Path) -> None:
    """fsync a file or a directory (a directory, so a new entry in it is durable)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def create_segment(spool_dir: Path) -> Segment:
    """A new, locked, empty segment; named *.jsonl only once locked, so nobody else claims it."""
    name = f"{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    temp = spool_dir / f"{name}.new"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    path = spool_dir / f"{name}{SEGMENT_SUFFIX}"
    os.rename(temp, path)
    fsync_path(spool_dir)
    return Segment(path, fd)


@dataclass
class _Active:
    """The segment being appended to, with its own group-fsync state."""

    segment: Segment
    lines: int = 0  # complete lines written
    size: int = 0
    synced: int = 0  # lines known to be on disk
    closed: bool = False
    sync_lock: threading.Lock = field(default_factory=threading.Lock)

    def sync_upto(self, lines: int) -> None:
        """fdatasync once for every line written so far; callers covered by it skip theirs."""
        with self.sync_lock:
            if self.synced >= lines or self.closed:
                return
            target = self.lines
            os.fdatasync(self.segment.fd)
            self.synced = target

    def finish(self) -> None:
        with self.sync_lock:
            if self.synced < self.lines:
                os.fdatasync(self.segment.fd)
            self.synced, self.closed = self.lines, True
            os.close(self.segment.fd)  # releases the flock: importers may claim it now


class SpoolWriter:
    """This process's active segment. append() is thread-safe; concurrent fsyncs are grouped,
    and sealing never makes append() wait for a disk flush."""

    def __init__(self, spool_dir: Path, fsync_each: bool = True) -> None:
        self.spool_dir = spool_dir
        self.fsync_each = fsync_each
        spool_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()
        self._active: _Active | None = _Active(create_segment(spool_dir))
        self.sealed_at = time.monotonic()

    @property
    def pending(self) -> int:
        """Lines in the active segment (not yet sealed for import)."""
        active = self._active
        return active.lines if active else 0

    @property
    def pending_bytes(self) -> int:
        active = self._active
        return active.size if active else 0

    def append(self, line: bytes) -> None:
        with self._lock:
            active = self._active
            if active is None:
                raise AuditError("The audit store is closed; open a new AuditStore to record.")
            _write_all(active.segment.fd, line)
            active.lines += 1
            active.size += len(line)
            lines = active.lines
        if self.fsync_each:
            active.sync_upto(lines)

    def sync(self) -> None:
        active = self._active
        if active is not None:
            active.sync_upto(active.lines)

    def seal(self, reopen: bool = True) -> Path | None:
        """Close the active segment (now importable) and start a new one; None when empty."""
        if reopen and self.pending == 0:
            return None
        fresh = _Active(create_segment(self.spool_dir)) if reopen else None
        with self._lock:
            old = self._active
            if old is not None:
                self._active = fresh
                self.sealed_at = time.monotonic()
        if old is None:  # closed meanwhile: drop the fresh segment again
            if fresh is not None:
                fresh.finish()
                fresh.segment.path.unlink(missing_ok=True)
            return None
        old.finish()
        if old.lines == 0:
            old.segment.path.unlink(missing_ok=True)
            return None
        return old.segment.path

    def close(self) -> None:
        self.seal(reopen=False)


def spool_files(spool_dir: Path) -> list[str]:
    """Every segment's path, oldest first: regular files only (opening a FIFO would block; the
    importer moves anything else to the quarantine folder)."""
    if not spool_dir.is_dir():
        return []
    return sorted(str(p) for p in spool_dir.glob(f"*{SEGMENT_SUFFIX}") if _regular(p))


def _regular(path: Path) -> bool:
    try:
        return S_ISREG(path.lstat().st_mode)
    except FileNotFoundError:
        return False


def claim_segments(spool_dir: Path, max_bytes: int) -> list[Segment]:
    """Lock every segment no live writer holds; the caller imports, then release()s them. An
    entry no import could ever read (not a regular file, a symlink, larger than max_bytes: no
    writer of ours seals one past a few MB) is moved to the quarantine folder, so it cannot
    stop every later import."""
    _remove_stale_new(spool_dir)
    claimed = []
    for path in sorted(spool_dir.glob(f"*{SEGMENT_SUFFIX}")):
        try:  # O_NONBLOCK: a FIFO would block the open; O_NOFOLLOW: a symlink points elsewhere
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except FileNotFoundError:
            continue
        except OSError as e:
            quarantine_entry(spool_dir, path, f"it cannot be opened ({e.strerror})")
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            stat = os.fstat(fd)
            if stat.st_nlink == 0:  # another importer finished it meanwhile
                raise BlockingIOError
        except BlockingIOError:
            os.close(fd)
            continue
        segment = Segment(path, fd, stat.st_size)
        why = ("it is not a regular file" if not S_ISREG(stat.st_mode) else
               f"it holds {stat.st_size:,} bytes, over the {max_bytes:,} a segment may"
               if stat.st_size > max_bytes else "")
        if why:
            quarantine_entry(spool_dir, path, why)
            os.close(fd)
            continue
        claimed.append(segment)
    return claimed


def _remove_stale_new(spool_dir: Path) -> None:
    """Empty `.new` files of a writer killed while creating a segment (never written to)."""
    for path in spool_dir.glob("*.new"):
        try:
            if time.time() - path.stat().st_mtime > STALE_NEW_S:
                path.unlink()
        except FileNotFoundError:
            continue


def release(segments: list[Segment], delete: bool) -> None:
    """Unlock claimed segments, deleting them once imported. A deletion lost in a crash only
    means importing the segment again, which the log_id key makes harmless: no dir fsync."""
    for segment in segments:
        if delete:
            segment.path.unlink(missing_ok=True)
        os.close(segment.fd)
