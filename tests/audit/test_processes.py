"""Other processes: a recorder killed with SIGKILL, and one holding the DuckDB file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import rag.commands.audit
from rag.__main__ import main
from rag.audit.store import AuditDatabaseBusy, AuditStore
from rag.config import PROJECT_ROOT
from tests.builders import held_duckdb, make_response


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}


def read_ids(stream, at_least: int, timeout_s: float = 60) -> list[str]:
    ids: list[str] = []
    deadline = time.monotonic() + timeout_s
    while len(ids) < at_least and time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        ids.append(line.strip())
    return ids


@pytest.mark.parametrize("kill_after", [1, 150, 400])
def test_every_returned_log_id_survives_sigkill_exactly_once(tmp_path, kill_after):
    db = tmp_path / "audit.duckdb"
    child = subprocess.Popen([sys.executable, "-m", "tests.builders", str(db), "100000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=child_env(), cwd=PROJECT_ROOT)
    printed = read_ids(child.stdout, kill_after)
    child.send_signal(signal.SIGKILL)
    rest, err = child.communicate(timeout=60)
    printed += [line for line in rest.split("\n")[:-1] if line]  # the last may be torn
    assert len(printed) >= kill_after, err
    with AuditStore(db) as store:
        store.flush()
    with duckdb.connect(str(db), read_only=True) as con:
        counts = dict(con.execute("SELECT log_id, count(*) FROM audit_logs GROUP BY log_id")
                      .fetchall())
    missing = [i for i in printed if i not in counts]
    assert not missing, f"{len(missing)} of {len(printed)} returned answers were lost"
    assert set(counts.values()) == {1}


@pytest.fixture()
def held_db(tmp_path) -> Iterator[Path]:
    """An audit file another process keeps open (read-write) for the whole test."""
    db = tmp_path / "audit.duckdb"
    with AuditStore(db) as store:
        store.record(make_response("already stored"))
    with held_duckdb(db):
        yield db


def test_locked_database_keeps_answers_in_the_spool_and_says_why(held_db):
    store = AuditStore(held_db, lock_timeout_s=0.2)
    assert "in use by another Folio process" in store.unavailable
    ids = [store.record(make_response(f"while locked {i}")) for i in range(3)]
    with pytest.raises(AuditDatabaseBusy) as caught:
        store.stats()
    message = str(caught.value)
    assert "the audit database" in message and "in use by another Folio process" in message
    assert "Stop that process" in message and "Traceback" not in message
    with pytest.raises(AuditDatabaseBusy):
        store.flush()
    store.close()  # does not raise; the entries stay spooled
    spooled = "".join(p.read_text() for p in (held_db.parent / "audit.spool").glob("*.jsonl"))
    assert all(i in spooled for i in ids)


def test_cli_reads_the_spool_while_locked_and_refuses_writes(held_db, capsys, monkeypatch):
    monkeypatch.setattr(rag.commands.audit, "LOCK_WAIT_S", 0.2)
    store = AuditStore(held_db, lock_timeout_s=0.2)
    store.record(make_response("spooled one"))
    store.record(make_response("spooled two", status="refused"))
    store.close()
    assert main(["audit", "stats", "--json", "--book", "all", "--db", str(held_db)]) == 0
    out, err = capsys.readouterr()
    stats = json.loads(out)
    assert (stats["total"], stats["refused"]) == (2, 1)
    assert "in use by another Folio process" in err and "spool" in err
    assert main(["audit", "list", "--book", "all", "--db", str(held_db)]) == 0
    assert "spooled two" in capsys.readouterr().out
    for argv in (["audit", "prune"], ["audit", "archive"], ["audit", "sql", "SELECT 1"]):
        assert main([*argv, "--db", str(held_db)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: the audit database") and err.count("\n") == 1


def test_spooled_answers_land_once_the_other_process_lets_go(tmp_path):
    db = tmp_path / "audit.duckdb"
    AuditStore(db).close()
    with held_duckdb(db) as holder:
        store = AuditStore(db, flush_interval=0.05, lock_timeout_s=0.1)
        _land_after_release(store, holder)


def _land_after_release(store: AuditStore, holder: subprocess.Popen) -> None:
    try:
        ids = {store.record(make_response(f"q{i}")) for i in range(5)}
        assert store.unavailable
        holder.kill()
        holder.wait(timeout=30)
        deadline = time.monotonic() + 10
        while store.unavailable and time.monotonic() < deadline:
            time.sleep(0.05)  # the writer retries on its own
        assert store.unavailable == ""
        assert set(store.query_logs(limit=10)["log_id"]) == ids
    finally:
        store.close()
