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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag.errors import AuditError

log = logging.getLogger(__name__)
SEGMENT_SUFFIX = ".jsonl"
REJECTED_FILE = "rejected.jsonl.bad"


@dataclass
class Segment:
    path: Path
    fd: int


def _fsync_dir(path: Path) -> None:
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
    _fsync_dir(spool_dir)
    return Segment(path, fd)


class SpoolWriter:
    """This process's active segment. append() is thread-safe; concurrent fsyncs are grouped."""

    def __init__(self, spool_dir: Path, fsync_each: bool = True) -> None:
        self.spool_dir = spool_dir
        self.fsync_each = fsync_each
        spool_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = threading.Lock()  # order: _lock before _sync_lock
        self._sync_lock = threading.Lock()
        self._segment: Segment | None = create_segment(spool_dir)
        self._written = self._synced = 0  # lines ever written / known to be on disk
        self.pending = 0  # lines in the active segment
        self.pending_bytes = 0

    @property
    def active_path(self) -> Path | None:
        return self._segment.path if self._segment else None

    def append(self, line: bytes) -> None:
        with self._lock:
            if self._segment is None:
                raise AuditError("The audit store is closed; open a new AuditStore to record.")
            _write_all(self._segment.fd, line)
            self._written += 1
            self.pending += 1
            self.pending_bytes += len(line)
            seq = self._written
        if self.fsync_each:
            self._sync_upto(seq)

    def _sync_upto(self, seq: int) -> None:
        with self._sync_lock:
            if self._synced >= seq or self._segment is None:
                return
            target = self._written  # every line up to here is in the current segment
            os.fdatasync(self._segment.fd)
            self._synced = target

    def sync(self) -> None:
        self._sync_upto(self._written)

    def seal(self, reopen: bool = True) -> Path | None:
        """Close the active segment (now importable) and start a new one; None when empty."""
        if self.pending == 0 and reopen:
            return None
        fresh = create_segment(self.spool_dir) if reopen else None
        with self._lock, self._sync_lock:
            old = self._segment
            if old is None:  # closed meanwhile: drop the fresh segment again
                release([fresh] if fresh else [], delete=True)
                return None
            os.fdatasync(old.fd)
            self._synced = self._written
            os.close(old.fd)
            empty = self.pending == 0
            self._segment, self.pending, self.pending_bytes = fresh, 0, 0
        if empty:
            old.path.unlink(missing_ok=True)
            return None
        return old.path

    def close(self) -> None:
        self.seal(reopen=False)


def claim_segments(spool_dir: Path) -> list[Segment]:
    """Lock every segment no live writer holds; the caller imports, then release()s them."""
    claimed = []
    for path in sorted(spool_dir.glob(f"*{SEGMENT_SUFFIX}")):
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.fstat(fd).st_nlink == 0:  # another importer finished it meanwhile
                raise BlockingIOError
        except BlockingIOError:
            os.close(fd)
            continue
        claimed.append(Segment(path, fd))
    return claimed


def release(segments: list[Segment], delete: bool) -> None:
    for segment in segments:
        if delete:
            segment.path.unlink(missing_ok=True)
        os.close(segment.fd)
    if delete and segments:
        _fsync_dir(segments[0].path.parent)


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


def read_segment(segment: Segment) -> list[dict[str, Any]]:
    with os.fdopen(os.dup(segment.fd), "rb") as f:
        f.seek(0)
        return list(parse_lines(f.read(), str(segment.path)))


def read_spool(spool_dir: Path) -> list[dict[str, Any]]:
    """Every spooled row, active segments included, without locking (for read-only views)."""
    rows = []
    for path in sorted(spool_dir.glob(f"*{SEGMENT_SUFFIX}")):
        try:
            rows.extend(parse_lines(path.read_bytes(), str(path)))
        except FileNotFoundError:
            continue
    return rows


def reject_rows(spool_dir: Path, rows: list[dict[str, Any]]) -> None:
    """Keep rows DuckDB refused beside the spool, so they are never silently dropped."""
    with open(spool_dir / REJECTED_FILE, "a", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        f.flush()
        os.fsync(f.fileno())
