"""Questions per minute per client, counted in one small SQLite file every process shares.

A sliding 60 s window: a question is allowed when fewer than `per_minute` of the client's
questions fall in the last 60 s, and then counted. SQLite in WAL mode with BEGIN IMMEDIATE
serialises the read-count-insert of every thread and process on the machine, so two server
workers and the app cannot each let a client through on the same last slot. Rows older than the
window are deleted on every check, so the file holds at most one minute of questions.

A damaged file (not a database, or a corrupt one) is moved aside as
ratelimit.sqlite.damaged-<time> and a fresh one started, with a warning: it holds only the last
minute of counts, so nothing of value is lost. If the file cannot be opened or written (a
read-only folder), questions are counted per process instead and a warning is logged once: a
broken counter must not stop answers."""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from rag.config import DEFAULT_SETTINGS_FILE, PROJECT_ROOT
from rag.config.files import read_settings_file
from rag.errors import ConfigError

DEFAULT_PER_MINUTE = 100  # the original design's API limit
WINDOW_S = 60.0
STATE_NAME = "ratelimit.sqlite"
RETRY_FILE_AFTER_S = 30.0  # after a failure, how long the per-process counter stands in
BUSY_TIMEOUT_S = 5.0
DAMAGE_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)  # primary result codes
RUN_ATTEMPTS = 3  # a damaged file healed, then one more try if another thread healed it too
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int  # questions per minute; 0 means unlimited
    remaining: int  # questions still allowed in the current window (0 when unlimited)
    retry_after_s: int  # whole seconds, >= 1 when not allowed, 0 when allowed

    def message(self) -> str:
        if self.allowed:
            return ("No rate limit." if self.limit <= 0 else
                    f"{self.remaining} of {self.limit} questions per minute left.")
        noun = "question" if self.limit == 1 else "questions"
        return (f"Rate limit reached: {self.limit} {noun} per minute. "
                f"Try again in {self.retry_after_s} s.")


def _decision(limit: int, asked: int, oldest: float | None, now: float,
              count: bool) -> RateDecision:
    """The decision for a client that asked `asked` questions in the window, the first at
    `oldest`; a refused client may ask again once that one is 60 s old."""
    if asked >= limit:
        wait = math.ceil((oldest if oldest is not None else now) + WINDOW_S - now)
        return RateDecision(False, limit, 0, max(1, wait))
    return RateDecision(True, limit, limit - asked - count, 0)


class ProcessLimiter:
    """The same sliding window in this process's memory (thread-safe): the stand-in when the
    shared file is unusable, and the app's limit per browser session (whose limit, from the
    settings, is passed with each check)."""

    def __init__(self, per_minute: int = 0, max_clients: int = 10_000) -> None:
        self.per_minute, self.max_clients = per_minute, max_clients
        self._times: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, client: str, now: float, count: bool = True,
              limit: int | None = None) -> RateDecision:
        """`limit` questions per minute (default: per_minute; 0 or less: no limit)."""
        limit = self.per_minute if limit is None else limit
        if limit <= 0:
            return RateDecision(True, 0, 0, 0)
        with self._lock:
            if len(self._times) > self.max_clients:
                for key in [k for k, t in self._times.items() if not t or t[-1] <= now - WINDOW_S]:
                    del self._times[key]
            times = self._times.setdefault(client, deque())
            while times and (times[0] <= now - WINDOW_S or times[0] > now + WINDOW_S):
                times.popleft()
            decision = _decision(limit, len(times), times[0] if times else None, now, count)
            if decision.allowed and count:
                times.append(now)
            return decision


class RateLimiter:
    """`per_minute` questions per client in any 60 s, shared through `state_path`."""

    def __init__(self, state_path: Path, per_minute: int,
                 clock: Callable[[], float] = time.time) -> None:
        self.state_path, self.per_minute, self.clock = Path(state_path), per_minute, clock
        self._local = threading.local()
        self._fallback = ProcessLimiter(per_minute)
        self._broken_until = 0.0
        self._warned = False
        self._generation = 0  # bumped when a damaged file is replaced: connections reopen
        self._heal_lock = threading.Lock()
        if per_minute > 0:
            self._run(lambda db: None, None)  # create the file now, so a problem shows at start

    def check(self, client: str) -> RateDecision:
        """Counts this question when allowed."""
        return self._decide(client, count=True)

    def peek(self, client: str) -> RateDecision:
        """What check() would decide now, without counting anything (for limits on failures:
        peek before the attempt, check() only when it failed)."""
        return self._decide(client, count=False)

    def _decide(self, client: str, count: bool) -> RateDecision:
        if self.per_minute <= 0:
            return RateDecision(True, 0, 0, 0)
        now = self.clock()
        if now < self._broken_until:
            return self._fallback.check(client, now, count)
        decision = self._run(lambda db: self._check_in(db, client, now, count), None)
        return decision if decision is not None else self._fallback.check(client, now, count)

    @property
    def shared(self) -> bool:
        """False while questions are counted per process because the file failed."""
        return self.clock() >= self._broken_until

    # -- the shared file ---------------------------------------------------------------------

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE IF NOT EXISTS questions (client TEXT NOT NULL, "
                   "asked REAL NOT NULL)")
        db.execute("CREATE INDEX IF NOT EXISTS questions_client ON questions (client, asked)")
        db.execute("CREATE INDEX IF NOT EXISTS questions_asked ON questions (asked)")

    def _check_in(self, db: sqlite3.Connection, client: str, now: float,
                  count: bool) -> RateDecision:
        # Rows from a clock set back by more than the window would otherwise block for that long.
        db.execute("DELETE FROM questions WHERE asked <= ? OR asked > ?",
                   (now - WINDOW_S, now + WINDOW_S))
        asked, oldest = db.execute("SELECT COUNT(*), MIN(asked) FROM questions WHERE client = ?",
                                   (client,)).fetchone()
        decision = _decision(self.per_minute, asked, oldest, now, count)
        if decision.allowed and count:
            db.execute("INSERT INTO questions (client, asked) VALUES (?, ?)", (client, now))
        return decision

    def _run(self, work: Callable[[sqlite3.Connection], object], failed: object) -> object:
        """`work` inside one BEGIN IMMEDIATE transaction; `failed` when the file fails.

        A damaged file is healed and the work tried again; so is work that failed because
        another thread healed the file under it (its -wal and -shm removed, the path moved)."""
        for attempt in range(RUN_ATTEMPTS):
            generation = self._generation
            try:
                db = self._connection()
                db.execute("BEGIN IMMEDIATE")
                try:
                    result = work(db)
                except BaseException:
                    db.rollback()
                    raise
                db.commit()
                return result
            except (sqlite3.Error, OSError) as e:
                last = attempt == RUN_ATTEMPTS - 1
                if not last and isinstance(e, sqlite3.DatabaseError) and \
                        (getattr(e, "sqlite_errorcode", 0) & 0xFF) in DAMAGE_CODES:
                    self._heal(e)
                    continue
                with self._heal_lock:  # waits for a heal under way in another thread
                    replaced = self._generation != generation
                if not last and replaced:
                    self._drop_connection()
                    continue
                return self._fail(e, failed)
        return failed  # not reached: the last attempt returns or fails over

    def _heal(self, error: sqlite3.Error) -> None:
        """Move the damaged file aside (unless another thread or process already has: the file
        is then not the one this connection opened) and start a fresh one."""
        with self._heal_lock:
            opened = getattr(self._local, "inode", None)
            self._drop_connection()
            try:
                if self.state_path.stat().st_ino != opened:
                    return  # replaced since this thread opened it
                aside = self.state_path.with_name(
                    f"{self.state_path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
                self.state_path.replace(aside)
                for suffix in ("-wal", "-shm"):
                    Path(f"{self.state_path}{suffix}").unlink(missing_ok=True)
            except OSError:
                return  # gone already, or the folder is read-only: _run fails over as before
            self._generation += 1
            log.warning("The rate-limit file %s was damaged (%s): moved aside as %s and a fresh "
                        "one started (it held only the last minute of questions).",
                        self.state_path, error, aside.name)

    def _drop_connection(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            try:
                db.close()
            except sqlite3.Error:
                pass
        self._local.__dict__.clear()

    def _fail(self, e: Exception, failed: object) -> object:
        self._drop_connection()  # a broken connection is reopened next time
        self._broken_until = self.clock() + RETRY_FILE_AFTER_S
        if not self._warned:
            self._warned = True
            log.warning("Rate limits are counted per process, not shared: %s could not be "
                        "used (%s). Make its folder writable; it holds only the last minute "
                        "of questions.", self.state_path, e)
        return failed

    def _connection(self) -> sqlite3.Connection:
        """One connection per thread and process (a forked child opens its own)."""
        db = getattr(self._local, "db", None)
        if db is None or self._local.pid != os.getpid() or \
                self._local.generation != self._generation:
            with self._heal_lock:  # never opened while another thread moves a damaged file
                self.state_path.parent.mkdir(parents=True, exist_ok=True)
                db = sqlite3.connect(self.state_path, timeout=BUSY_TIMEOUT_S,
                                     isolation_level=None)
                self._local.db, self._local.pid = db, os.getpid()
                self._local.generation = self._generation
                self._local.inode = self.state_path.stat().st_ino
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")  # a lost last second is harmless
                self._create(db)
        return db


def rate_limit_per_minute(env: Mapping[str, str] | None = None,
                          settings_file: Path | None = None) -> int:
    """RAG_RATE_LIMIT, else settings.toml [access] rate_limit, else 100."""
    env = os.environ if env is None else env
    raw = (env.get("RAG_RATE_LIMIT") or "").strip()
    if raw:
        if not raw.isascii() or not raw.isdigit():
            raise ConfigError(f"RAG_RATE_LIMIT={raw[:40]!r} must be a whole number of questions "
                              "per minute per client, 0 or more (0: no limit).")
        return int(raw)
    path = Path(settings_file or env.get("RAG_SETTINGS") or DEFAULT_SETTINGS_FILE)
    access = read_settings_file(path).get("access", {})
    if not isinstance(access, dict):
        raise ConfigError(f"{path}: [access] must be a table.")
    value = access.get("rate_limit", DEFAULT_PER_MINUTE)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{path}: [access] rate_limit must be a whole number of questions per "
                          f"minute per client, 0 or more (0: no limit), not {value!r}.")
    return value


def default_state_path(audit_db: Path | None = None, env: Mapping[str, str] | None = None
                       ) -> Path:
    """ratelimit.sqlite next to the audit database (RAG_AUDIT_DB, else data/audit.duckdb), so
    every process using one audit shares one set of counters."""
    env = os.environ if env is None else env
    if audit_db is None and env.get("RAG_AUDIT_DB"):
        audit_db = Path(env["RAG_AUDIT_DB"])
    return (audit_db.parent if audit_db else PROJECT_ROOT / "data") / STATE_NAME
