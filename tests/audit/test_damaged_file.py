"""A truncated audit file (issue 12, item 7): answers keep being spooled, every entry point says
the file is damaged and how to move it aside, and the spool is imported into a new file."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from rag.__main__ import main
from rag.audit.spool import SEGMENT_SUFFIX
from rag.audit.store import AuditStore
from tests.builders import make_response

DAMAGED = "is damaged"


@pytest.fixture()
def damaged(tmp_path):
    """A real audit file with 50 rows, copied and cut in half."""
    good = tmp_path / "good" / "audit.duckdb"
    good.parent.mkdir()
    with AuditStore(good) as store:
        for i in range(50):
            store.record(make_response(f"question {i}", seed=i))
    db = tmp_path / "audit.duckdb"
    shutil.copy(good, db)
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)
    return db


def spooled_ids(store: AuditStore) -> set[str]:
    return {json.loads(line)["log_id"] for p in store.spool_dir.glob(f"*{SEGMENT_SUFFIX}*")
            for line in p.read_text().splitlines() if line.strip()}


def test_answers_are_spooled_and_the_message_says_to_move_the_file_aside(damaged, caplog):
    with caplog.at_level(logging.WARNING, logger="rag.audit.store"):
        store = AuditStore(damaged)
        log_id = store.record(make_response("asked while the file is damaged"))
        store.close()
    assert f"The audit file {damaged} {DAMAGED} (" in store.unavailable
    assert f"`mv {damaged} {damaged}.broken`" in store.unavailable
    assert "answers are kept in the spool" in store.unavailable
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [store.unavailable]  # said once, not once per retry
    assert log_id in spooled_ids(store)

    damaged.rename(damaged.with_name("audit.duckdb.broken"))
    with AuditStore(damaged) as fresh:
        assert fresh.get_log(log_id)["user_query_text"] == "asked while the file is damaged"


def test_reads_and_the_console_say_the_file_is_damaged(damaged, capsys):
    with AuditStore(damaged) as store:
        store.record(make_response("spooled question"))
    assert main(["audit", "stats", "--json", "--book", "all", "--db", str(damaged)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["total"] == 1  # the spooled entry
    assert DAMAGED in err and "Showing only the 1 entries still in the spool" in err
    assert main(["audit", "sql", "SELECT count(*) FROM audit_logs", "--db", str(damaged)]) == 2
    _, err = capsys.readouterr()
    assert DAMAGED in err and "Traceback" not in err
