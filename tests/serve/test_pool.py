"""Answering processes (rag.serve.pool) behind a real uvicorn server: a question that holds the
interpreter lock does not stop /v1/health or other questions, and once over its deadline it is
abandoned with the pipeline's timeout record, logged, and its process replaced."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from rag.access.keys import ApiKeys
from rag.answer.pipeline import TIMEOUT_MESSAGE
from rag.audit.store import AuditStore
from rag.serve.app import create_app
from rag.serve.auth import Access
from rag.serve.pool import ProcessPool
from rag.serve.runner import PoolRunner
from rag.serve.service import BookInfo
from tests.builders import uvicorn_thread
from tests.fakes.busy_answerer import SPIN

TOKEN = "pool-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
DEADLINE_S = 3.0
INFO = BookInfo("sample", "Sample", 1, "local", "minilm", "extractive", "")


@pytest.fixture(scope="module")
def served(sample_settings, tmp_path_factory):
    """(base URL, pool, audit store) of a server with two single-thread answering processes."""
    audit = AuditStore(tmp_path_factory.mktemp("pool-audit") / "audit.duckdb",
                       flush_interval=0.05)
    pool = ProcessPool(sample_settings, 2, 1, builder="tests.fakes.busy_answerer:busy_answerer",
                       deadline_s=DEADLINE_S)
    pool.start()
    app = create_app(PoolRunner(pool, INFO, sample_settings, audit),
                     Access(ApiKeys.parse(f"reader:{TOKEN}")))
    with uvicorn_thread(app) as url:
        yield url, pool, audit
    audit.close()


def ask(url: str, question: str, session: str, **extra) -> httpx.Response:
    body = {"question": question, "session_id": session, **extra}
    return httpx.post(f"{url}/v1/ask", json=body, headers=AUTH, timeout=60)


def test_health_answers_at_once_while_a_question_holds_its_process(served):
    url, pool, audit = served
    result: dict = {}

    def ask_slow() -> None:
        started = time.perf_counter()
        result["reply"] = ask(url, SPIN, "spin-json")
        result["took"] = time.perf_counter() - started

    slow = threading.Thread(target=ask_slow)
    slow.start()
    time.sleep(0.5)  # the question is spinning in its process
    waits = []
    for _ in range(5):
        t0 = time.perf_counter()
        reply = httpx.get(f"{url}/v1/health", headers=AUTH, timeout=10)
        waits.append(time.perf_counter() - t0)
        assert reply.status_code == 200 and reply.json()["answerers"] == 2
        other = ask(url, "Is another question answered meanwhile?", "beside-spin")
        assert other.json()["status"] == "success"  # by the other process
        time.sleep(0.2)
    assert max(waits) < 1.0, waits
    slow.join(30)
    record = result["reply"].json()
    assert result["reply"].status_code == 200 and DEADLINE_S <= result["took"] < DEADLINE_S + 5
    assert record["status"] == "error" and record["error_message"] == TIMEOUT_MESSAGE
    audit.flush()
    rows = audit.query_logs(limit=100)
    row = rows[rows["session_id"] == "spin-json"]
    assert len(row) == 1 and row["client_id"].iloc[0] == "reader"
    assert audit.get_log(row["log_id"].iloc[0])["status"] == "error"


def test_the_stopped_process_is_replaced(served):
    url, pool, _ = served
    deadline = time.monotonic() + 120
    while not all(w.alive for w in pool.workers) and time.monotonic() < deadline:
        time.sleep(0.2)  # the previous test's replacement may still be starting
    restarts = pool.restarts
    ask(url, SPIN, "spin-again")
    while pool.restarts == restarts and time.monotonic() < deadline:
        time.sleep(0.2)
    assert pool.restarts == restarts + 1 and all(w.alive for w in pool.workers)
    answered_by = {ask(url, f"question {i}?", "after").json()["answer_text"].rsplit(" ", 1)[1]
                   for i in range(6)}
    assert answered_by <= {str(w.pid) for w in pool.workers}


def test_a_streamed_question_over_its_deadline_ends_with_the_timeout_record(served):
    url, _, _ = served
    with httpx.stream("POST", f"{url}/v1/ask", headers=AUTH, timeout=60,
                      json={"question": SPIN, "stream": True, "session_id": "spin-sse"}) as r:
        text = r.read().decode()
    lines = text.rstrip().splitlines()
    assert r.status_code == 200 and lines[-2] == "event: final"
    final = json.loads(lines[-1].removeprefix("data: "))
    assert final["status"] == "error" and final["error_message"] == TIMEOUT_MESSAGE
