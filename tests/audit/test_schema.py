"""Numbered migrations: recorded, applied to old files, refused for files from a newer Folio."""

from __future__ import annotations

import os
from datetime import datetime

import duckdb
import pytest

from rag.audit.schema import COLUMNS, MIGRATIONS, MIGRATIONS_TABLE, apply_migrations
from rag.audit.store import AuditStore
from rag.errors import AuditError
from tests.builders import make_response


def test_a_new_file_records_every_migration_by_name(tmp_path):
    db = tmp_path / "audit.duckdb"
    AuditStore(db).close()
    with duckdb.connect(str(db), read_only=True) as con:
        names = [r[0] for r in con.execute(f"SELECT name FROM {MIGRATIONS_TABLE} ORDER BY name")
                 .fetchall()]
    assert names == [m.__name__ for m in MIGRATIONS]
    assert names[0] == "m001_initial"


def test_an_old_file_is_upgraded_and_keeps_its_rows(tmp_path):
    db = tmp_path / "audit.duckdb"
    with duckdb.connect(str(db)) as con:
        assert apply_migrations(con, MIGRATIONS[:1]) == ["m001_initial"]
        con.execute("INSERT INTO audit_logs (log_id, timestamp, status, success, "
                    "user_query_text) VALUES ('old', '2024-05-01 12:00', 'success', true, "
                    "'kept?')")
    with AuditStore(db) as store:
        assert store.get_log("old")["user_query_text"] == "kept?"
    with duckdb.connect(str(db), read_only=True) as con:
        applied = {r[0] for r in con.execute(f"SELECT name FROM {MIGRATIONS_TABLE}").fetchall()}
        indexes = {r[0] for r in con.execute("SELECT index_name FROM duckdb_indexes()")
                   .fetchall()}
    assert applied == {m.__name__ for m in MIGRATIONS}
    assert {"audit_logs_query_id", "audit_logs_answer_id", "audit_logs_timestamp"} <= indexes


def test_a_file_from_a_newer_folio_is_refused_with_a_clear_message(tmp_path):
    db = tmp_path / "audit.duckdb"
    AuditStore(db).close()
    with duckdb.connect(str(db)) as con:
        con.execute(f"INSERT INTO {MIGRATIONS_TABLE} VALUES ('m999_future', ?)",
                    [datetime(2030, 1, 1)])
    with pytest.raises(AuditError, match="newer Folio.*m999_future.*RAG_AUDIT_DB"):
        AuditStore(db)


def test_a_second_run_applies_nothing(tmp_path):
    with duckdb.connect(str(tmp_path / "a.duckdb")) as con:
        assert len(apply_migrations(con)) == len(MIGRATIONS)
        assert apply_migrations(con) == []


def test_import_column_types_match_the_migrated_table(tmp_path):
    with duckdb.connect(str(tmp_path / "a.duckdb")) as con:
        apply_migrations(con)
        described = [tuple(r[:2]) for r in con.execute("DESCRIBE audit_logs").fetchall()]
    assert described == list(COLUMNS)


def test_a_file_that_is_not_duckdb_is_moved_aside_once_it_cannot_be_one_being_created(tmp_path):
    """Not DuckDB and written seconds ago, it may be a file DuckDB is creating: answers wait in
    the spool; older, it is moved aside (rag.audit.damage) and a new file takes them."""
    db = tmp_path / "audit.duckdb"
    db.write_text("not a database")
    with AuditStore(db) as store:
        log_id = store.record(make_response("kept in the spool"))
        assert store.state().code == "damaged" and "not a valid DuckDB" in store.unavailable
        assert db.read_text() == "not a database"
        os.utime(db, (0, 0))
        assert store.flush() == 1 and store.get_log(log_id) is not None
    assert len(list(tmp_path.glob("audit.duckdb.damaged-*"))) == 1
