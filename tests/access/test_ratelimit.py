"""The shared rate limiter: exact counts across threads and processes, window expiry on an
injected clock, unlimited, bounded state, a broken state file, and the configured limit; the
per-process window the app keeps per browser session."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rag.access.ratelimit import (
    DEFAULT_PER_MINUTE,
    ProcessLimiter,
    RateDecision,
    RateLimiter,
    default_state_path,
    rate_limit_per_minute,
)
from rag.config import PROJECT_ROOT
from rag.errors import ConfigError


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_client_gets_its_limit_then_a_wait_until_its_oldest_question_leaves(tmp_path):
    clock = Clock()
    limiter = RateLimiter(tmp_path / "rl.sqlite", 3, clock=clock)
    decisions = []
    for step in (0, 10, 20, 30):
        clock.now = 1_000_000.0 + step
        decisions.append(limiter.check("widget"))
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert decisions[3] == RateDecision(False, 3, 0, 30)  # the first question leaves at +60
    assert decisions[3].message() == ("Rate limit reached: 3 questions per minute. "
                                      "Try again in 30 s.")
    assert limiter.check("other-client").allowed  # limits are per client
    clock.now = 1_000_000.0 + 59.5
    assert limiter.check("widget").retry_after_s == 1  # rounded up, never 0
    clock.now = 1_000_000.0 + 60
    assert limiter.check("widget").allowed  # the window slid past the first question
    assert not limiter.check("widget").allowed


def test_a_refused_question_is_not_counted(tmp_path):
    clock = Clock()
    limiter = RateLimiter(tmp_path / "rl.sqlite", 1, clock=clock)
    assert limiter.check("a").allowed
    for _ in range(5):
        clock.now += 5
        assert not limiter.check("a").allowed
    clock.now = 1_000_000.0 + 60
    assert limiter.check("a").allowed


def test_peek_decides_without_counting(tmp_path):
    clock = Clock()
    limiter = RateLimiter(tmp_path / "rl.sqlite", 2, clock=clock)
    assert limiter.peek("a") == RateDecision(True, 2, 2, 0)
    assert [limiter.peek("a").allowed for _ in range(10)] == [True] * 10
    limiter.check("a")
    limiter.check("a")
    clock.now += 15
    assert limiter.peek("a") == RateDecision(False, 2, 0, 45)


def test_zero_means_unlimited_and_touches_no_file(tmp_path):
    limiter = RateLimiter(tmp_path / "rl.sqlite", 0)
    assert all(limiter.check("a") == RateDecision(True, 0, 0, 0) for _ in range(500))
    assert not (tmp_path / "rl.sqlite").exists()
    assert RateDecision(True, 0, 0, 0).message() == "No rate limit."


def test_state_stays_bounded_to_one_window(tmp_path):
    clock = Clock()
    path = tmp_path / "rl.sqlite"
    limiter = RateLimiter(path, 5, clock=clock)
    for i in range(300):  # 300 clients over 5 minutes
        clock.now += 1
        limiter.check(f"client-{i}")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM questions").fetchone()[0] == 60


def test_threads_share_one_count(tmp_path):
    limiter = RateLimiter(tmp_path / "rl.sqlite", 60)
    allowed: list[bool] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        for _ in range(25):
            decision = limiter.check("widget")
            with lock:
                allowed.append(decision.allowed)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(allowed) == 200 and sum(allowed) == 60
    assert limiter.shared


CHILD = """
import sys, time
from pathlib import Path
from rag.access.ratelimit import RateLimiter
limiter = RateLimiter(Path(sys.argv[1]), int(sys.argv[2]))
go = float(sys.argv[3])
while time.time() < go:
    time.sleep(0.005)
print(sum(limiter.check("widget").allowed for _ in range(int(sys.argv[4]))))
"""


def test_processes_share_one_count(tmp_path):
    import time

    path, go = tmp_path / "rl.sqlite", time.time() + 3  # all four start asking together
    children = [subprocess.Popen([sys.executable, "-c", CHILD, str(path), "50", str(go), "30"],
                                 cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    counts = [int(child.communicate(timeout=120)[0]) for child in children]
    assert sum(counts) == 50, counts  # 120 questions asked, exactly the limit allowed
    assert all(child.returncode == 0 for child in children)
    assert not RateLimiter(path, 50).check("widget").allowed  # and this process sees it too


def test_a_damaged_state_file_is_moved_aside_and_a_fresh_one_started(tmp_path, caplog):
    """Issue 43: a damaged rate-limit file never healed (counted per process for good)."""
    path = tmp_path / "rl.sqlite"
    path.write_bytes(b"this is not a database, " * 200)
    with caplog.at_level(logging.WARNING, logger="rag.access.ratelimit"):
        limiter = RateLimiter(path, 2)
        decisions = [limiter.check("widget") for _ in range(3)]
    assert [d.allowed for d in decisions] == [True, True, False] and limiter.shared
    aside = list(tmp_path.glob("rl.sqlite.damaged-*"))
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not a database")
    with sqlite3.connect(path) as db:  # the fresh file counts, for every process
        assert db.execute("SELECT COUNT(*) FROM questions").fetchone()[0] == 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "damaged" in warnings[0] and aside[0].name in warnings[0]


def test_a_file_damaged_while_running_heals_in_every_thread(tmp_path):
    path = tmp_path / "rl.sqlite"
    limiter = RateLimiter(path, 100)
    assert limiter.check("a").allowed
    other = threading.Thread(target=limiter.check, args=("a",))  # a second connection
    other.start()
    other.join()
    path.write_bytes(b"\x00garbage" * 4096)  # overwritten in place while open
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    results = []
    workers = [threading.Thread(target=lambda: results.append(limiter.check("a").allowed))
               for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert results == [True] * 4 and limiter.shared
    assert len(list(tmp_path.glob("rl.sqlite.damaged-*"))) == 1


def test_a_state_file_that_cannot_be_created_falls_back_too(tmp_path, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where a folder should be")
    with caplog.at_level(logging.WARNING, logger="rag.access.ratelimit"):
        limiter = RateLimiter(blocker / "rl.sqlite", 1)
        assert limiter.check("a").allowed and not limiter.check("a").allowed
    assert sum("counted per process" in r.getMessage() for r in caplog.records) == 1


def test_the_file_is_tried_again_after_it_is_repaired(tmp_path):
    clock = Clock()
    folder = tmp_path / "state"
    folder.write_text("a file where the folder should be")
    path = folder / "rl.sqlite"
    limiter = RateLimiter(path, 5, clock=clock)
    assert limiter.check("a").allowed and not limiter.shared
    folder.unlink()
    clock.now += 31
    assert limiter.check("a").allowed and limiter.shared
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM questions").fetchone()[0] == 1


@pytest.mark.parametrize("env, expected", [
    ({}, 100), ({"RAG_RATE_LIMIT": "7"}, 7), ({"RAG_RATE_LIMIT": " 0 "}, 0)])
def test_the_limit_comes_from_the_environment_else_100(env, expected, tmp_path):
    assert rate_limit_per_minute(env, tmp_path / "none.toml") == expected
    assert DEFAULT_PER_MINUTE == 100


@pytest.mark.parametrize("value", ["-1", "ten", "1.5", "١٢"])
def test_a_bad_environment_limit_is_a_clear_error(value, tmp_path):
    with pytest.raises(ConfigError, match="RAG_RATE_LIMIT=.* must be a whole number"):
        rate_limit_per_minute({"RAG_RATE_LIMIT": value}, tmp_path / "none.toml")


def test_the_limit_comes_from_settings_access_table(tmp_path):
    settings = tmp_path / "settings.toml"
    settings.write_text("[access]\nrate_limit = 12\n")
    assert rate_limit_per_minute({}, settings) == 12
    assert rate_limit_per_minute({"RAG_RATE_LIMIT": "3"}, settings) == 3
    assert rate_limit_per_minute({"RAG_SETTINGS": str(settings)}) == 12
    for bad in ("-4", "true", '"100"', "2.5"):
        settings.write_text(f"[access]\nrate_limit = {bad}\n")
        with pytest.raises(ConfigError, match=r"\[access\] rate_limit must be a whole number"):
            rate_limit_per_minute({}, settings)


def test_the_project_settings_limit_is_valid():
    assert rate_limit_per_minute({}, PROJECT_ROOT / "data" / "settings.toml") >= 0


def test_the_state_file_sits_next_to_the_audit_database(tmp_path):
    assert default_state_path(env={}) == PROJECT_ROOT / "data" / "ratelimit.sqlite"
    audit = tmp_path / "audit.duckdb"
    assert default_state_path(env={"RAG_AUDIT_DB": str(audit)}) == tmp_path / "ratelimit.sqlite"
    assert default_state_path(Path("/x/audit.duckdb"), env={}) == Path("/x/ratelimit.sqlite")


def test_the_process_window_takes_its_limit_with_each_check_and_says_how_long_to_wait():
    limiter = ProcessLimiter()  # the app's: the limit comes from the settings on every question
    assert all(limiter.check("a", t, limit=3).allowed for t in (0.0, 10.0, 20.0))
    assert limiter.check("a", 30.0, limit=3) == RateDecision(False, 3, 0, 30)
    assert limiter.check("b", 30.0, limit=3).allowed  # per session
    assert limiter.check("a", 60.0, limit=3).allowed  # the first question left the window
    assert limiter.check("a", 61.0, limit=3) == RateDecision(False, 3, 0, 9)
    assert limiter.check("a", 61.0, limit=0) == RateDecision(True, 0, 0, 0)  # 0: no limit
    assert limiter.check("a", 61.0, limit=4) == RateDecision(True, 4, 0, 0)  # a raised limit


def test_the_process_window_forgets_idle_clients_beyond_its_budget():
    limiter = ProcessLimiter(5, max_clients=2)
    for i, key in enumerate("abc"):
        limiter.check(key, float(i))
    limiter.check("d", 100.0)  # a, b and c have been idle for a whole window
    assert set(limiter._times) == {"d"}
