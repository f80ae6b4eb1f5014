"""A damaged audit file (issue 12 item 7, issue 43 item 9): zero bytes, garbage, a truncation or
a corrupt checksum. Whoever meets it first moves it aside (kept byte for byte, never deleted) and
starts a new one; answers keep flowing through the spool into it; `rag ask` answers, `rag serve`
starts, `rag audit stats/list/sql` work and say what happened: never a DuckDB traceback."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient

from rag.__main__ import main
from rag.audit.damage import SUFFIX, file_identity, move_aside
from rag.audit.state import DAMAGED, OK
from rag.audit.store import AuditStore
from rag.serve.app import audit_health
from tests.builders import SAMPLE_BOOK, make_response

MOVED = "it was moved to"
BLOCK = 256 * 1024  # DuckDB's block size; three 4 KB headers come first
HEADERS = 3 * 4096


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A real audit file with 600 answers (several blocks of rows)."""
    path = tmp_path_factory.mktemp("good") / "audit.duckdb"
    with AuditStore(path) as store:
        for i in range(600):
            store.record(make_response(f"question {i} " + "about encoders " * 40, seed=i))
    return path


def _zero(db: Path) -> None:
    db.write_bytes(b"")


def _garbage(db: Path) -> None:
    db.write_bytes(os.urandom(40_000))


def _truncated(good: Path, db: Path) -> None:
    shutil.copy(good, db)
    with db.open("r+b") as f:
        f.truncate(db.stat().st_size // 2)


def _checksum(good: Path, db: Path) -> None:
    """Bytes overwritten in every 4 KB past the headers (metadata blocks are 4 KB parts of a
    block): no stored checksum matches, so opening the file meets it."""
    shutil.copy(good, db)
    with db.open("r+b") as f:
        for start in range(HEADERS, db.stat().st_size, 4096):
            f.seek(start + 2048)
            f.write(b"\xff" * 8)


def damage(kind: str, good: Path, folder: Path) -> Path:
    db = folder / "audit.duckdb"
    folder.mkdir(exist_ok=True)
    {"zero": lambda: _zero(db), "garbage": lambda: _garbage(db),
     "truncated": lambda: _truncated(good, db), "checksum": lambda: _checksum(good, db)}[kind]()
    old = db.stat().st_mtime - 60  # not a file DuckDB is creating this very second
    os.utime(db, (old, old))
    return db


def moved_files(db: Path) -> list[Path]:
    return sorted(db.parent.glob(f"{db.name}{SUFFIX}*"))


@pytest.mark.parametrize("kind", ["zero", "garbage", "truncated", "checksum"])
def test_a_damaged_file_is_moved_aside_and_a_new_one_takes_the_answers(kind, good, tmp_path,
                                                                        caplog):
    db = damage(kind, good, tmp_path / kind)
    before = db.read_bytes()
    with caplog.at_level(logging.WARNING):
        with AuditStore(db) as store:  # raised, or crashed later, before
            log_id = store.record(make_response("asked after the damage"))
            assert store.flush() == 1
            assert store.get_log(log_id)["user_query_text"] == "asked after the damage"
            state = store.state()
    (moved,) = moved_files(db)
    assert moved.read_bytes() == before  # kept byte for byte
    assert state.code == OK and state.moved_aside == str(moved)
    said = [r.getMessage() for r in caplog.records if MOVED in r.getMessage()]
    assert len(said) == 1 and str(moved) in said[0] and "nothing in it was deleted" in said[0]
    with duckdb.connect(str(db), read_only=True) as con:  # a sound new file
        assert con.execute("SELECT count(*) FROM audit_logs").fetchone()[0] == 1


def _first_block_only_queries_read(good: Path, db: Path) -> bool:
    """Corrupt one data block that opening the file does not read but a full read of the rows
    does; which block that is is DuckDB's layout, so each is tried."""
    size = good.stat().st_size
    for start in range(HEADERS, size, BLOCK):
        shutil.copy(good, db)
        with db.open("r+b") as f:
            f.seek(start + BLOCK // 2)
            f.write(b"\xff" * 64)
        with duckdb.connect(str(db), read_only=True) as con:
            try:
                con.execute("SELECT count(*) FROM _audit_migrations").fetchall()
            except duckdb.Error:
                continue
            try:
                con.execute("SELECT * FROM audit_logs").fetchall()
            except duckdb.Error:
                return True
    return False


def test_damage_met_only_by_a_query_heals_and_the_cli_says_so(good, tmp_path, capsys, caplog):
    """The rows already in the damaged file stay in it (moved aside, readable with DuckDB up to
    the damaged block); the explorer goes on with the new file and the spool."""
    db = tmp_path / "audit.duckdb"
    if not _first_block_only_queries_read(good, db):
        pytest.skip("no block of this file is read by queries only")
    with caplog.at_level(logging.WARNING):
        code = main(["audit", "export", "--book", "all", "--db", str(db),
                     str(tmp_path / "all.csv")])
    out, err = capsys.readouterr()
    assert code == 0, err  # _duckdb.Error and exit 1 before
    assert "Traceback" not in err and "_duckdb" not in err
    assert out.startswith("wrote 0 rows")  # the new file (and the empty spool)
    assert any(MOVED in r.getMessage() for r in caplog.records)
    assert len(moved_files(db)) == 1


@pytest.mark.parametrize("kind", ["zero", "checksum"])
def test_audit_commands_keep_working_and_say_the_file_was_moved(kind, good, tmp_path, capsys,
                                                                caplog):
    """The move is said as a warning, which the CLI prints on stderr (caught here by caplog)."""
    db = damage(kind, good, tmp_path / kind)
    args = ["--db", str(db)]
    with caplog.at_level(logging.WARNING):
        assert main(["audit", "stats", "--json", "--book", "all", *args]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["total"] == 0 and "Traceback" not in err
    assert [r for r in caplog.records if MOVED in r.getMessage()]
    caplog.clear()
    with AuditStore(db) as store:
        store.record(make_response("after the move"))
    with caplog.at_level(logging.WARNING):
        assert main(["audit", "list", "--book", "all", *args]) == 0
    assert "after the move" in capsys.readouterr().out
    assert not [r for r in caplog.records if MOVED in r.getMessage()]  # moved once
    assert main(["audit", "sql", "SELECT count(*) AS n FROM audit_logs", "--json", *args]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 1}]
    assert len(moved_files(db)) == 1


def test_rag_ask_answers_with_a_zero_byte_audit_file(sample_index, sample_index_dir, tmp_path,
                                                     capsys, monkeypatch, caplog):
    db = damage("zero", Path(), tmp_path)
    monkeypatch.setenv("RAG_AUDIT_DB", str(db))
    with caplog.at_level(logging.WARNING):
        code = main(["ask", "What does the integral term of a PID controller correct?",
                     "--book", str(SAMPLE_BOOK), "--index", str(sample_index_dir)])
    out, err = capsys.readouterr()
    assert code == 0, err  # exit 1, no answer, before
    assert "[S1] " in out and any(MOVED in r.getMessage() for r in caplog.records)
    with AuditStore(db) as store:
        assert store.count_logs() == 1


def test_rag_serve_starts_with_a_garbage_audit_file(sample_settings, sample_index,
                                                   sample_index_dir, tmp_path):
    from rag.serve.factory import build_app

    db = damage("garbage", Path(), tmp_path)
    # a copy of the index: build_app closes every store this process holds (its answering
    # processes open their own), the session's sample index included
    index_dir = tmp_path / "index"
    shutil.copytree(sample_index_dir, index_dir)
    # raised AuditError before: the server did not start
    app, _ = build_app(dataclasses.replace(sample_settings, audit_db=db, index_dir=index_dir))
    with TestClient(app) as client:
        health = client.get("/v1/health").json()
    assert health["status"] == "ok" and health["audit"] == "ok"
    assert len(moved_files(db)) == 1


def test_a_file_that_is_no_duckdb_file_of_ours_is_not_moved(tmp_path):
    """A folder where the file should be is a setting to fix, not damage: left where it is."""
    db = tmp_path / "audit.duckdb"
    db.mkdir()
    with AuditStore(db) as store:
        store.record(make_response("kept in the spool"))
        assert store.state().code == DAMAGED
        assert "Is a directory" in store.state().detail
        health = audit_health(store)  # what /v1/health says, with a key: the real state
        assert health["audit"] == "damaged" and "Is a directory" in health["audit_detail"]
        assert health["audit_spooled_bytes"] > 0
    assert db.is_dir() and not moved_files(db)


def test_only_the_file_found_damaged_is_moved(tmp_path):
    """Two processes meeting the same damage: the second finds another file at the path (the
    new one the first started) and leaves it."""
    db = damage("zero", Path(), tmp_path)
    found = file_identity(db)
    error = duckdb.IOException(f'The file "{db}" exists, but it is not a valid DuckDB '
                               "database file!")
    assert move_aside(db, found, error) is not None
    db.write_bytes(b"")  # the next file, its identity another
    os.utime(db, (0, 0))
    assert move_aside(db, found, error) is None and db.exists()
    assert len(moved_files(db)) == 1
