"""An audit that heals (issue 43, item 5): a torn spool line cut inside a multi-byte character,
foreign bytes, lines that are no audit row, and entries that are no file are quarantined with a
log line and the rest imported; the importer never fails for good on one line; reads, the CLI
and the console keep working; the store's state says what is really happening."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

import duckdb
import pytest

from rag.__main__ import main
from rag.audit.quarantine import QUARANTINE_DIR
from rag.audit.row import RowEncoder, build_row
from rag.audit.spool import SEGMENT_SUFFIX
from rag.audit.state import FAILING, OK, SPOOLING
from rag.audit.store import AuditStore
from tests.builders import held_duckdb, make_response

DEAD = f"00000000000000000001-4242-deadbeef{SEGMENT_SUFFIX}"  # a killed writer's segment


def spooled_line(question: str, log_id: str) -> bytes:
    row = build_row(make_response(question), log_id=log_id, session_id="", client_id="",
                    app_version="test")
    return RowEncoder().encode(row)


@pytest.fixture()
def db(tmp_path) -> Path:
    return tmp_path / "audit.duckdb"


def dead_segment(db: Path, data: bytes) -> Path:
    spool = db.with_name("audit.spool")
    spool.mkdir(exist_ok=True)
    (spool / DEAD).write_bytes(data)
    return spool / DEAD


def kept(db: Path, name: str = DEAD) -> bytes:
    return (db.with_name("audit.spool") / QUARANTINE_DIR / f"{name}.bad").read_bytes()


def test_a_line_torn_inside_a_character_is_quarantined_and_the_rest_imported(db, caplog,
                                                                              capsys):
    torn = spooled_line("café torn", "torn-1")
    cut = torn[:torn.index("é".encode()) + 1]  # the writer died after the first byte of é
    dead_segment(db, spooled_line("café whole", "whole-1") + cut)
    with caplog.at_level(logging.WARNING), AuditStore(db) as store:
        assert store.flush() == 1  # raised InvalidInputException on every try before
        assert store.flush() == 0
        assert store.get_log("whole-1")["user_query_text"] == "café whole"
        assert store.state().code == OK and store.state().quarantined == 1
    assert kept(db) == cut + b"\n"  # byte for byte
    (said,) = [r.getMessage() for r in caplog.records if DEAD in r.getMessage()]
    assert "line 2: torn" in said and "kept in" in said and "the rest was imported" in said
    every = ["--book", "all", "--db", str(db)]
    assert main(["audit", "stats", "--json", *every]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 1
    assert main(["audit", "list", *every]) == 0
    assert "café whole" in capsys.readouterr().out
    assert main(["audit", "sql", "SELECT count(*) AS n FROM audit_logs", "--json",
                 "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [{"n": 1}] and "Traceback" not in err


def test_foreign_bytes_and_lines_that_are_no_row_are_each_quarantined(db, caplog):
    lines = [spooled_line("first", "a-1"), b"\x00\xff\xfe binary noise\n",
             b"not json at all\n", b"[1, 2, 3]\n", b'{"log_id": "no-status"}\n', b"\n",
             spooled_line("last", "a-2")]
    dead_segment(db, b"".join(lines))
    with caplog.at_level(logging.WARNING), AuditStore(db) as store:
        assert store.flush() == 2
        assert set(store.query_logs(limit=10)["log_id"]) == {"a-1", "a-2"}
    assert kept(db) == b"".join(lines[1:5])
    (said,) = [r.getMessage() for r in caplog.records if DEAD in r.getMessage()]
    assert ("4 line(s) could not be imported (line 2: not UTF-8; line 3: not valid JSON; "
            "line 4: not a JSON object; line 5: lacks log_id, timestamp, status or success)"
            ) in said


def test_entries_that_are_no_readable_file_are_moved_aside_without_blocking(db, tmp_path):
    """A FIFO blocked the importer's open for good; a folder or a symlink failed every import."""
    spool = db.with_name("audit.spool")
    spool.mkdir()
    os.mkfifo(spool / f"1-fifo{SEGMENT_SUFFIX}")
    (spool / f"2-folder{SEGMENT_SUFFIX}").mkdir()
    (tmp_path / "elsewhere").write_bytes(spooled_line("elsewhere", "x-1"))
    (spool / f"3-link{SEGMENT_SUFFIX}").symlink_to(tmp_path / "elsewhere")
    dead_segment(db, spooled_line("sound", "s-1"))
    done: list[int] = []
    with AuditStore(db) as store:
        worker = threading.Thread(target=lambda: done.append(store.flush()), daemon=True)
        worker.start()
        worker.join(timeout=30)
        assert done == [1]
    left = sorted(p.name for p in (spool / QUARANTINE_DIR).iterdir())
    assert left == [f"1-fifo{SEGMENT_SUFFIX}.bad", f"2-folder{SEGMENT_SUFFIX}.bad",
                    f"3-link{SEGMENT_SUFFIX}.bad"]
    assert (tmp_path / "elsewhere").exists()  # a link is moved, never what it points at


def test_the_console_reads_a_spool_with_a_torn_line_before_it_is_imported(db):
    with AuditStore(db, flush_interval=3600, import_interval_s=3600) as store:
        torn = spooled_line("café torn", "torn-1")
        dead_segment(db, spooled_line("café pending", "p-1") + b"\xc3\n" + torn[:20])
        frame = store.run_console_query("SELECT user_query_text FROM audit_logs")
        assert list(frame["user_query_text"]) == ["café pending"]
        assert store.count_logs() == 1


def test_the_state_says_busy_while_another_process_holds_the_file(db):
    with AuditStore(db) as store:
        assert store.state().code == OK
    with held_duckdb(db) as holder:
        store = AuditStore(db, flush_interval=0.05, lock_timeout_s=0.1)
        try:
            store.record(make_response("while held"))
            assert store.state().code == SPOOLING and store.state().spooled_bytes > 0
            assert "in use by another Folio process" in store.state().message
        finally:
            holder.kill()
            holder.wait(timeout=30)
            store.close()


def test_the_state_says_failing_while_imports_fail_and_ok_once_they_pass(db, caplog):
    """Health said ok while every import failed, before."""
    AuditStore(db).close()  # a migrated, empty file
    for index in ("query_id", "answer_id", "timestamp"):  # DuckDB alters no indexed table
        alter(db, f"DROP INDEX audit_logs_{index}")
    alter(db, "ALTER TABLE audit_logs ALTER COLUMN fallback_reason SET NOT NULL")  # by hand
    with caplog.at_level(logging.WARNING), \
            AuditStore(db, flush_interval=0.05, import_interval_s=0.05) as store:
        store.record(make_response("an answer with no fallback"))
        wait_for(lambda: store.state().code == FAILING)
        assert "NOT NULL constraint failed" in store.state().detail
        assert store.unavailable == store.state().detail
        alter(db, "ALTER TABLE audit_logs ALTER COLUMN fallback_reason DROP NOT NULL")
        wait_for(lambda: store.state().code == OK)
        assert store.count_logs() == 1
    said = [r.getMessage() for r in caplog.records if "imports fail" in r.getMessage()]
    assert len(said) == 1  # once, not at every retry


def wait_for(condition, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def alter(db: Path, sql: str) -> None:
    """Run sql on the file, waiting while a store's import holds it (~50 ms at a time)."""
    def done() -> bool:
        try:
            with duckdb.connect(str(db)) as con:
                con.execute(sql)
            return True
        except duckdb.IOException:
            return False

    wait_for(done)
