"""`python -m rag audit ...` through the real entry point."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from rag.__main__ import main
from rag.audit.store import AuditStore
from tests.builders import make_response


def of_book(response, book_id: str = "book"):
    """The response as asked of a book (the sample book's id is its folder name, "book")."""
    return dataclasses.replace(response, settings={**response.settings, "book_id": book_id,
                                                   "book_title": book_id.title()},
                               metadata={**response.metadata, "query_type": "factual"})


@pytest.fixture()
def db(tmp_path, monkeypatch):
    monkeypatch.delenv("RAG_BOOK", raising=False)  # the current book is the sample book
    db = tmp_path / "audit.duckdb"
    with AuditStore(db) as store:
        old = datetime.now(UTC) - timedelta(days=120)
        store.record(of_book(make_response("an old question", timestamp=old)))
        store.record(of_book(make_response("how is it scored?")))
        store.record(of_book(make_response("off topic?", status="refused",
                                           reason_codes=("off_topic",))))
    return db


def test_another_books_questions_are_left_out_unless_asked_for(db, capsys):
    with AuditStore(db) as store:
        store.record(of_book(make_response("a question about another book"), "other-book"))
        store.record(make_response("logged before books were recorded"))
    code, out, _ = run(capsys, "audit", "stats", "--json", "--db", str(db))
    assert code == 0 and json.loads(out)["total"] == 3
    code, out, _ = run(capsys, "audit", "list", "--json", "--book", "other-book", "--db",
                       str(db))
    assert [e["user_query_text"] for e in json.loads(out)] == ["a question about another book"]
    code, out, _ = run(capsys, "audit", "stats", "--json", "--book", "all", "--db", str(db))
    assert json.loads(out)["total"] == 5
    code, out, _ = run(capsys, "audit", "list", "--json", "--type", "conceptual", "--db",
                       str(db))
    assert json.loads(out) == []
    code, out, _ = run(capsys, "audit", "sql", "--json", "--db", str(db),
                       "SELECT count(*) AS n FROM book_logs")
    assert code == 0 and json.loads(out) == [{"n": 3}]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_stats_json_has_the_documented_keys(db, capsys):
    code, out, _ = run(capsys, "audit", "stats", "--json", "--db", str(db))
    stats = json.loads(out)
    assert code == 0
    assert {"total", "answered", "refused", "errors", "first", "last", "latency_p50_ms",
            "latency_p95_ms", "confidence_mean"} <= set(stats)
    assert (stats["total"], stats["answered"], stats["refused"], stats["errors"]) == (3, 2, 1, 0)
    code, out, _ = run(capsys, "audit", "stats", "--db", str(db))
    assert code == 0 and "refusal_rate: 0.3333" in out


def test_rag_audit_db_chooses_the_file(db, capsys, monkeypatch):
    monkeypatch.setenv("RAG_AUDIT_DB", str(db))
    code, out, _ = run(capsys, "audit", "stats", "--json")
    assert code == 0 and json.loads(out)["total"] == 3


def test_list_filters_by_status_and_limits(db, capsys):
    code, out, _ = run(capsys, "audit", "list", "--status", "refused", "--json", "--db", str(db))
    (entry,) = json.loads(out)
    assert code == 0 and entry["user_query_text"] == "off topic?"
    assert entry["reason_codes"] == ["off_topic"]
    code, out, _ = run(capsys, "audit", "list", "--limit", "2", "--db", str(db))
    assert code == 0 and len(out.strip().splitlines()) == 2 and "an old question" not in out
    assert run(capsys, "audit", "list", "--limit", "0", "--db", str(db))[0] == 2


def test_show_prints_everything_and_unknown_ids_exit_2(db, capsys):
    _, out, _ = run(capsys, "audit", "list", "--json", "--limit", "1", "--db", str(db))
    log_id = json.loads(out)[0]["log_id"]
    code, out, _ = run(capsys, "audit", "show", log_id, "--db", str(db))
    record = json.loads(out)
    assert code == 0 and record["log_id"] == log_id and record["candidate_pool"]["candidates"]
    code, _, err = run(capsys, "audit", "show", "nope", "--db", str(db))
    assert code == 2 and err.count("\n") == 1 and "audit list" in err


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_the_filtered_rows(db, capsys, tmp_path, fmt):
    out_file = tmp_path / f"refused.{fmt}"
    code, out, _ = run(capsys, "audit", "export", "--format", fmt, "--status", "refused",
                       str(out_file), "--db", str(db))
    frame = pd.read_csv(out_file) if fmt == "csv" else pd.read_parquet(out_file)
    assert code == 0 and "wrote 1 rows" in out and list(frame["status"]) == ["refused"]


def test_archive_then_prune(db, capsys):
    code, out, _ = run(capsys, "audit", "archive", "--older-than", "90", "--db", str(db))
    assert code == 0 and out.startswith("moved 1 entries")
    _, out, _ = run(capsys, "audit", "stats", "--json", "--archive", "--db", str(db))
    assert json.loads(out)["total"] == 3
    code, out, _ = run(capsys, "audit", "prune", "--older-than", "100", "--db", str(db))
    assert code == 0 and out.startswith("deleted 1 entries")
    code, _, err = run(capsys, "audit", "prune", "--older-than", "-5", "--db", str(db))
    assert code == 2 and "whole number of days" in err


def test_sql_runs_read_only_queries_and_refuses_the_rest(db, capsys):
    code, out, _ = run(capsys, "audit", "sql", "SELECT status, count(*) AS n FROM audit_logs "
                       "GROUP BY status ORDER BY status", "--json", "--db", str(db))
    assert code == 0 and json.loads(out) == [{"status": "refused", "n": 1},
                                             {"status": "success", "n": 2}]
    code, _, err = run(capsys, "audit", "sql", "SELECT log_id FROM audit_logs", "--max-rows",
                       "1", "--db", str(db))
    assert code == 0 and "only the first 1 rows" in err
    code, _, err = run(capsys, "audit", "sql", "DROP TABLE audit_logs", "--db", str(db))
    assert code == 2 and err.startswith("error: Query refused") and err.count("\n") == 1


def test_flush_imports_what_is_spooled(tmp_path, capsys):
    db = tmp_path / "audit.duckdb"
    store = AuditStore(db, flush_interval=60)
    store.record(make_response())
    code, out, _ = run(capsys, "audit", "flush", "--db", str(db))
    assert code == 0 and out.startswith("imported 0")  # the open store holds its segment
    store.close()
    _, out, _ = run(capsys, "audit", "stats", "--json", "--book", "all", "--db", str(db))
    assert json.loads(out)["total"] == 1
