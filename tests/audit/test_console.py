"""The read-only SQL console: what runs, what is refused (and why), caps and the sandbox."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import duckdb
import pandas as pd
import pytest

from rag.audit.console import check_statement, open_console
from rag.audit.store import AuditStore
from rag.errors import AuditError
from tests.builders import make_response


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    store = AuditStore(tmp_path_factory.mktemp("console") / "audit.duckdb")
    old = datetime.now(UTC) - timedelta(days=200)
    store.record(make_response("archived question", timestamp=old))
    for i in range(30):
        store.record(make_response(f"question {i}", seed=i))
    store.archive(90)
    yield store
    store.close()


@pytest.mark.parametrize("sql", [
    "SELECT count(*) AS n FROM audit_logs",
    "WITH s AS (SELECT status FROM audit_logs) SELECT status, count(*) FROM s GROUP BY status",
    "FROM audit_logs SELECT log_id LIMIT 3",
    "DESCRIBE audit_logs",
    "SUMMARIZE SELECT confidence_score FROM audit_logs",
    "SHOW TABLES",
    "EXPLAIN SELECT * FROM audit_logs WHERE status = 'refused'",
    "SELECT count(*) FROM audit_archive",
    "SELECT count(*) FROM audit_all;",
])
def test_read_only_statements_run(store, sql):
    assert not store.run_console_query(sql).empty


def test_archived_rows_are_visible_through_audit_archive_and_audit_all(store):
    archived = store.run_console_query("SELECT user_query_text FROM audit_archive")
    assert list(archived["user_query_text"]) == ["archived question"]
    total = store.run_console_query("SELECT count(*) AS n FROM audit_all")
    assert total["n"].item() == 31


@pytest.mark.parametrize(("sql", "reason"), [
    ("INSERT INTO audit_logs (log_id) VALUES ('x')", "INSERT statements are refused"),
    ("UPDATE audit_logs SET status = 'success'", "UPDATE statements are refused"),
    ("DELETE FROM audit_logs", "DELETE statements are refused"),
    ("DROP TABLE audit_logs", "DROP statements are refused"),
    ("CREATE TABLE copy AS SELECT * FROM audit_logs", "CREATE statements are refused"),
    ("ALTER TABLE audit_logs ADD COLUMN z INTEGER", "ALTER statements are refused"),
    ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH and DETACH are refused"),
    ("DETACH audit", "ATTACH and DETACH are refused"),
    ("COPY audit_logs TO '/tmp/leak.csv'", "COPY and EXPORT are refused"),
    ("EXPORT DATABASE '/tmp/leak'", "COPY and EXPORT are refused"),
    ("INSTALL httpfs", "INSTALL and LOAD are refused"),
    ("LOAD httpfs", "INSTALL and LOAD are refused"),
    ("SET enable_external_access = true", "settings are fixed"),
    ("PRAGMA enable_profiling", "settings are fixed"),
    ("USE memory", "settings are fixed"),
    ("CHECKPOINT", "CALL statements are refused"),
    ("BEGIN TRANSACTION", "TRANSACTION statements are refused"),
    ("EXPLAIN DELETE FROM audit_logs", "EXPLAIN is allowed for SELECT queries only"),
    ("SELECT * FROM read_csv('/etc/passwd')", "read_csv()"),
    ("SELECT * FROM read_csv_auto('/etc/passwd')", "read_csv_auto()"),
    ("SELECT * FROM read_parquet('archive.parquet')", "read_parquet()"),
    ("SELECT * FROM read_json('https://example.com/a.json')", "read_json()"),
    ("SELECT * FROM read_text('/etc/hostname')", "read_text()"),
    ("SELECT * FROM glob('/etc/*')", "glob()"),
    ("SELECT * FROM query('SELECT 1')", "query()"),
    ("SELECT * FROM '/etc/passwd'", "file named in quotes"),
    ("SELECT * FROM 'https://example.com/x.csv'", "file named in quotes"),
    ('SELECT * FROM "read_csv"(\'/etc/passwd\')', "read_csv()"),
    ("SELECT * FROM read_csv /* a comment */ ('/etc/passwd')", "read_csv()"),
    ("SELECT 1; SELECT 2", "exactly one statement; this has 2"),
    ("CREATE TABLE t AS PIVOT audit_logs ON status", "CREATE statements are refused"),
    ("COPY (PIVOT audit_logs ON status) TO '/tmp/leak.csv'", "COPY and EXPORT are refused"),
    ("INSERT INTO audit_logs PIVOT audit_logs ON status", "INSERT statements are refused"),
    ("WITH p AS (PIVOT audit_logs ON status) INSERT INTO audit_logs SELECT * FROM p",
     "INSERT inside a query is refused"),
    ("WITH d AS (DELETE FROM audit_logs RETURNING *) SELECT * FROM d",
     "DELETE inside a query is refused"),
    ("SELECT 1; DROP TABLE audit_logs", "exactly one statement"),
    ("   ", "the query is empty"),
])
def test_refused_statements_say_why(store, sql, reason):
    with pytest.raises(AuditError) as caught:
        store.run_console_query(sql)
    assert reason in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("sql", [
    "CREATE TABLE t AS PIVOT audit_logs ON status",
    "COPY (PIVOT audit_logs ON status) TO '/tmp/leak.csv'",
    "INSERT INTO audit_logs PIVOT audit_logs ON status",
    "SET VARIABLE v = (SELECT count(*) FROM (PIVOT audit_logs ON status))",
    "EXPLAIN CREATE TABLE t AS PIVOT audit_logs ON status",
    "WITH d AS (DELETE FROM audit_logs RETURNING *) SELECT * FROM d",
])
def test_writes_wrapped_around_a_read_fail_the_first_check(sql):
    """Issue 43 (low): these parse as PIVOT's MULTI or as a SELECT; only the sandbox stopped
    them, with DuckDB's words, before."""
    with pytest.raises(AuditError, match="^Query refused: "):
        check_statement(sql)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM (PIVOT audit_logs ON status)",
    "WITH p AS (PIVOT audit_logs ON status) SELECT * FROM p",
    "SELECT count(*) AS n FROM audit_logs /* a /* nested */ read_csv('x') */",
    "SELECT count(*) AS n FROM audit_logs WHERE status <> e'read_csv(\\'x\\')'",
    'SELECT count(*) AS "delete" FROM audit_logs',
])
def test_reads_that_look_like_writes_or_files_run(store, sql):
    """DuckDB's own tokenizer decides what is a comment or a literal (a nested comment ended at
    the first */ for the hand-made lexer, which refused the first of these)."""
    assert not store.run_console_query(sql).empty


def test_unparseable_sql_gets_the_parser_message(store):
    with pytest.raises(AuditError, match="could not be parsed.*syntax error"):
        store.run_console_query("SELEC 1")


def test_rows_are_capped(store):
    frame = store.run_console_query("SELECT log_id FROM audit_logs", max_rows=10)
    assert len(frame) == 10 and frame.attrs["truncated"] is True
    whole = store.run_console_query("SELECT log_id FROM audit_logs", max_rows=1000)
    assert len(whole) == 30 and whole.attrs["truncated"] is False


def test_slow_queries_are_stopped_at_the_time_limit(store):
    with pytest.raises(AuditError, match="ran longer than 0.3 s"):
        store.run_console_query("SELECT sum(hash(range)) FROM range(100000000000)",
                                timeout_s=0.3)
    assert store.count_logs() == 30  # the store keeps working afterwards


def test_python_variables_are_not_reachable(store):
    secret_frame = pd.DataFrame({"key": ["sk-live"]})  # noqa: F841  (what a scan would find)
    with pytest.raises(AuditError, match="secret_frame"):
        store.run_console_query("SELECT * FROM secret_frame")


def test_the_sandbox_holds_even_without_the_statement_check(store):
    """Engine-level guards behind the checks: read-only attach, no file access, locked config."""
    store.flush()
    with store._db.lock:  # the console needs the file to itself within this process
        store._db.close()
        con = open_console(store.db_path, store.archive_dir)
        try:
            for sql, error in [
                ("SELECT * FROM read_csv('/etc/passwd')", duckdb.PermissionException),
                ("COPY audit_logs TO '/tmp/leak.csv'", duckdb.PermissionException),
                ("ATTACH '/tmp/other.duckdb' AS other", duckdb.PermissionException),
                ("LOAD httpfs", duckdb.PermissionException),
                ("DELETE FROM audit_logs", duckdb.Error),
                ("SET enable_external_access = true", duckdb.Error),
                ("SET lock_configuration = false", duckdb.Error),
            ]:
                with pytest.raises(error):
                    con.execute(sql)
            assert con.execute("SELECT count(*) FROM audit_logs").fetchone()[0] == 30
        finally:
            con.close()
