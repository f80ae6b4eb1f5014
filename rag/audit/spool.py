"""Append-only spool of audit rows: one JSON line per answer, on disk before record() returns.

Each process appends to its own segment file and holds an exclusive flock on it while it is
active. An importer claims a segment by taking that lock, so it only ever imports segments whose
writer has sealed them or died (a SIGKILL releases the lock); segments are deleted only after the
rows are committed, and the log_id primary key makes a repeated import harmless.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.errors import AuditError

log = logging.getLogger(__name__)
SEGMENT_SUFFIX = ".jsonl"
REJECTED_FILE = "rejected.jsonl.bad"
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


def claim_segments(spool_dir: Path) -> list[Segment]:
    """Lock every segment no live writer holds; the caller imports, then release()s them."""
    _remove_stale_new(spool_dir)
    claimed = []
    for path in sorted(spool_dir.glob(f"*{SEGMENT_SUFFIX}")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            stat = os.fstat(fd)
            if stat.st_nlink == 0:  # another importer finished it meanwhile
                raise BlockingIOError
        except BlockingIOError:
            os.close(fd)
            continue
        claimed.append(Segment(path, fd, stat.st_size))
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


def parse_lines(data: bytes, source: str = "") -> Iterator[dict[str, Any]]:
    """Complete JSON lines; a torn last line (the writer died mid-write, unanswered) is skipped."""
    lines = data.split(b"\n")
    for number, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except ValueError:
            log.warning("audit spool %s line %d is not valid JSON; skipped", source, number)


def reject_rows(spool_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Keep rows DuckDB refused beside the spool, so they are never silently dropped."""
    with open(spool_dir / REJECTED_FILE, "a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())
