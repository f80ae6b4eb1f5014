"""AuditStore's write path: columns, candidate pool, secrets, concurrency, spool import."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import duckdb
import pytest

import rag.config
from rag.audit.schema import MIGRATIONS, apply_migrations
from rag.audit.spool import SEGMENT_SUFFIX
from rag.audit.store import AuditStore
from rag.errors import AuditError, ConfigError
from rag.retrieval.hybrid import pool_from_record, rank_candidates
from rag.types import RetrievalSettings
from tests.builders import make_error_response, make_response

FAKE_KEY = "sk-ant-FAKE-0123456789abcdefXYZ"


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return tmp_path / "audit.duckdb"


def rows_of(db: Path, sql: str = "SELECT * FROM audit_logs") -> list[dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def test_record_maps_every_response_field_to_its_column(db):
    response = make_response("How are scores blended?", reason_codes=("caveat",), seed=3)
    with AuditStore(db) as store:
        log_id = store.record(response, session_id="sess-1", client_id="client-9")
        assert store.flush() == 1
    (row,) = rows_of(db)
    meta, hit = response.metadata, response.retrieval.hits[0]
    assert row["log_id"] == log_id and row["query_id"] == "q-3" and row["answer_id"]
    assert (row["session_id"], row["client_id"]) == ("sess-1", "client-9")
    assert row["user_query_text"] == row["retrieval_query"] == "How are scores blended?"
    assert (row["source_mode"], row["mode_used"], row["fallback_reason"]) == (
        "full-book", "full-book", None)
    assert row["chunks_retrieved_count"] == len(response.retrieval.hits)
    assert (row["retrieval_latency_ms"], row["synthesis_latency_ms"],
            row["total_latency_ms"]) == (40.0, 60.0, 100.0)
    assert (row["llm_provider"], row["llm_model"]) == ("extractive", "extractive-model")
    assert (row["llm_prompt"], row["llm_response"]) == ("Answer from the excerpts.",
                                                        "raw model text")
    assert row["answer_text"] == response.answer
    assert (row["confidence_score"], row["confidence_level"]) == (0.82, "medium")
    assert row["retrieval_confidence"] == pytest.approx(response.retrieval.best_score)
    assert row["generation_confidence"] == 0.8
    returned = json.loads(row["chunks_returned"])[0]
    assert {k: returned[k] for k in ("chunk_id", "section_id", "dense", "bm25_raw", "bm25",
                                     "blended")} == {
        "chunk_id": hit.chunk.chunk_id, "section_id": hit.chunk.section_id, "dense": hit.dense,
        "bm25_raw": hit.bm25_raw, "bm25": hit.bm25, "blended": hit.blended}
    assert json.loads(row["citations"])[0]["chunk_id"] == response.citations[0].chunk_id
    assert row["cited_sections"] == [f"m1/ch1#{response.citations[0].section_id}"]
    assert json.loads(row["guardrail_actions"])[0]["reason_code"] == "caveat"
    assert row["reason_codes"] == ["caveat"]
    assert (row["status"], row["success"], row["error_stage"]) == ("success", True, "")
    assert json.loads(row["settings"])["book_hash"] == "abc123"
    assert row["app_version"] == rag.__version__
    assert row["timestamp"].isoformat() == meta["timestamp"].replace("+00:00", "")


def test_an_offline_answers_evidence_is_kept_for_the_reviewer(db, pipeline):
    """What the answer was made from, as the chat's "Why this answer" shows it: the quoted units
    and their probabilities, the confidence's inputs, the passages shown under the answer; for a
    refusal, the quantity no quote stated. A file written before the column (m005) gains it, its
    old rows holding none."""
    with duckdb.connect(str(db)) as con:
        apply_migrations(con, MIGRATIONS[:5])
        con.execute("INSERT INTO audit_logs (log_id, timestamp, status, success) VALUES "
                    "('old', '2026-11-01', 'success', true)")
    answered = pipeline.answer("Why do most humanoids use absolute encoders rather than "
                               "incremental ones?")
    refused = pipeline.answer("What payload can a full-size humanoid carry in its hands?")
    with AuditStore(db) as store:
        ids = [store.record(answered), store.record(refused)]
        store.flush()
        old, first, second = (store.get_log(i) for i in ("old", *ids))
    assert old["answer_evidence"] is None
    evidence = first["answer_evidence"]
    assert evidence["answer_quotes"] == list(answered.draft.quotes)
    assert evidence["answer_supports"] == [round(x, 4) for x in answered.draft.supports]
    assert evidence["answer_runner_up"] == pytest.approx(answered.draft.runner_up)
    assert evidence["answer_coverage"] == pytest.approx(answered.draft.coverage)
    more = answered.metadata["more_from_book"]
    assert more and [m["text"] for m in evidence["answer_more"]] == [m["text"] for m in more]
    assert evidence["answer_unstated"] == []
    assert second["status"] == "refused" and second["answer_evidence"]["answer_quotes"] == []
    assert second["answer_evidence"]["answer_unstated"] == ["mass (kg, g, lb)"]


def test_candidate_pool_reranks_without_embedding_to_the_same_hits(db):
    response = make_response(n_candidates=30, seed=7)
    with AuditStore(db) as store:
        log_id = store.record(response)
        record = store.get_log(log_id)
    pool = pool_from_record(record["candidate_pool"])
    again = rank_candidates(pool, response.retrieval.settings)
    assert [(h.chunk.chunk_id, h.blended) for h in again.hits] == [
        (h.chunk.chunk_id, h.blended) for h in response.retrieval.hits]
    looser = rank_candidates(pool, RetrievalSettings(w_dense=0.5, threshold=0.2, top_k=10))
    assert len(looser.hits) >= len(again.hits)


def test_error_response_without_retrieval_or_draft_is_recorded(db):
    with AuditStore(db) as store:
        log_id = store.record(make_error_response("The question is empty."))
        record = store.get_log(log_id)
    assert record["status"] == "error" and record["success"] is False
    assert record["error_message"] == "The question is empty."
    assert record["error_stage"] == "validate"
    assert record["candidate_pool"] is None and record["chunks_returned"] == []
    assert record["llm_prompt"] == "" and record["user_query_text"] == ""


def test_secrets_never_reach_the_spool_or_the_database(db, tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "tok-ABCDEFGH12345678")
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text('QDRANT_API_KEY = "qdrant-SECRET-999"')
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", tmp_path)
    leak = f"key {FAKE_KEY} tok-ABCDEFGH12345678 and qdrant-SECRET-999"
    response = make_response(f"Is {leak} valid?", prompt=f"system prompt {leak}",
                             raw=f"model said {leak}", answer=f"The key is {FAKE_KEY}.")
    response = type(response)(**{**response.__dict__, "settings": {"llm": leak},
                                 "error_message": leak})
    with AuditStore(db, flush_interval=60) as store:
        store.record(response)
        spooled = b"".join(p.read_bytes() for p in store.spool_dir.glob(f"*{SEGMENT_SUFFIX}"))
        assert b"[REDACTED]" in spooled
        for secret in (FAKE_KEY, "tok-ABCDEFGH12345678", "qdrant-SECRET-999"):
            assert secret.encode() not in spooled
    stored = json.dumps(rows_of(db), default=str)
    assert "[REDACTED]" in stored
    for secret in (FAKE_KEY, "tok-ABCDEFGH12345678", "qdrant-SECRET-999"):
        assert secret not in stored


def test_eight_threads_of_500_records_give_exactly_4000_rows(db):
    responses = [make_response(f"question {i}", seed=i) for i in range(8)]
    ids: list[list[str]] = [[] for _ in range(8)]

    def worker(n: int) -> None:
        ids[n] = [store.record(responses[n], session_id=f"t{n}") for _ in range(500)]

    with AuditStore(db, flush_interval=0.05, batch_size=500) as store:
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        store.flush()
        assert store.count_logs() == 4000
    (row,) = rows_of(db, "SELECT count(*) AS n, count(DISTINCT log_id) AS d FROM audit_logs")
    assert row == {"n": 4000, "d": 4000}
    stored = {r["log_id"] for r in rows_of(db, "SELECT log_id FROM audit_logs")}
    assert stored == {i for chunk in ids for i in chunk}
    assert not list((db.parent / "audit.spool").glob(f"*{SEGMENT_SUFFIX}"))


def test_background_writer_imports_without_an_explicit_flush(db):
    with AuditStore(db, flush_interval=0.05) as store:
        store.record(make_response())
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
                p.stat().st_size for p in store.spool_dir.glob(f"*{SEGMENT_SUFFIX}")):
            time.sleep(0.02)  # a non-empty segment is deleted only after its rows committed
        sizes = [p.stat().st_size for p in store.spool_dir.glob(f"*{SEGMENT_SUFFIX}")]
        assert sizes == [0]  # only the fresh, empty segment is left
        assert store.count_logs() == 1


def test_a_segment_imported_twice_adds_no_duplicates(db, tmp_path):
    """A kill between the commit and the segment's deletion means importing it again."""
    with AuditStore(db, flush_interval=60) as store:
        ids = [store.record(make_response(f"q{i}", seed=i)) for i in range(5)]
        store._spool.seal()
        (segment,) = [p for p in store.spool_dir.glob(f"*{SEGMENT_SUFFIX}")
                      if p.stat().st_size]
        shutil.copy(segment, tmp_path / "copy")
        assert store.flush() == 5
        shutil.copy(tmp_path / "copy", segment)
        assert store.flush() == 0
        assert not segment.exists()
    assert sorted(r["log_id"] for r in rows_of(db)) == sorted(ids)


def test_torn_last_line_is_quarantined_and_repeated_lines_stored_once(db):
    spool = db.parent / "audit.spool"
    with AuditStore(db, flush_interval=60) as store:
        log_id = store.record(make_response())
        store._spool.seal()
        (segment,) = [p for p in spool.glob(f"*{SEGMENT_SUFFIX}") if p.stat().st_size]
        line = segment.read_bytes()
        with open(segment, "ab") as f:
            f.write(line)
            f.write(b'{"log_id": "torn", "status": "succ')  # the writer died mid-line
        store.flush()
        kept = (spool / "quarantine" / f"{segment.name}.bad").read_bytes()
    assert [r["log_id"] for r in rows_of(db)] == [log_id]
    assert kept == b'{"log_id": "torn", "status": "succ\n'


def test_rows_lacking_a_required_column_are_quarantined(db):
    spool = db.parent / "audit.spool"
    spool.mkdir()
    good = {"log_id": "ok", "timestamp": "2025-01-01T00:00:00", "status": "success",
            "success": True}
    bad = {"log_id": "bad", "timestamp": "2025-01-01T00:00:00", "status": None, "success": True}
    (spool / f"0-dead{SEGMENT_SUFFIX}").write_text(json.dumps(good) + "\n" + json.dumps(bad)
                                                   + "\n")
    with AuditStore(db) as store:
        assert store.flush() == 1
    assert [r["log_id"] for r in rows_of(db)] == ["ok"]
    kept = (spool / "quarantine" / f"0-dead{SEGMENT_SUFFIX}.bad").read_text()
    assert json.loads(kept) == bad


def test_record_after_close_raises_and_close_is_idempotent(db):
    store = AuditStore(db)
    store.close()
    store.close()
    with pytest.raises(AuditError, match="closed"):
        store.record(make_response())


def test_os_durability_still_lands_every_row(db):
    with AuditStore(db, durability="os") as store:
        for i in range(20):
            store.record(make_response(f"q{i}"))
    assert len(rows_of(db)) == 20
    with pytest.raises(ConfigError, match="durability"):
        AuditStore(db, durability="never")


def test_two_stores_in_one_process_share_the_file(db):
    with AuditStore(db) as first, AuditStore(db) as second:
        first.record(make_response("one"))
        second.record(make_response("two"))
        assert first.flush() == 1 and second.flush() == 1
        assert first.count_logs() == second.count_logs() == 2


def test_an_open_store_lets_another_process_open_the_file(db):
    import subprocess
    import sys

    probe = "import duckdb, sys; duckdb.connect(sys.argv[1]).close(); print('opened')"
    with AuditStore(db, flush_interval=0.05) as store:
        store.record(make_response())
        store.flush()
        assert store.count_logs() == 1  # the file is attached only within each operation
        out = subprocess.run([sys.executable, "-c", probe, str(db)], capture_output=True,
                             text=True, timeout=60)
        assert out.stdout.strip() == "opened", out.stderr
        assert store.count_logs() == 1  # and it reopens on demand
