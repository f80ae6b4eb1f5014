"""`rag serve --workers 2`: two worker processes on one port share one rate limit per client
and one audit log; each worker opens the index (one holds the store, the other a copy)."""

from __future__ import annotations

import os
import time

import httpx

from rag.audit.store import AuditStore
from tests.builders import SAMPLE_BOOK, free_port, start_serve, stop_group, wait_healthy

TOKEN = "workers-test-token-0123456789"
LIMIT = 6


def test_two_workers_share_the_limit_and_the_audit(sample_index, sample_index_dir, tmp_path):
    port, audit_db = free_port(), tmp_path / "audit.duckdb"
    env = {**os.environ, "RAG_INDEX_DIR": str(sample_index_dir), "RAG_AUDIT_DB": str(audit_db),
           "RAG_API_KEYS": f"reader:{TOKEN}", "RAG_RATE_LIMIT": str(LIMIT),
           "HF_HUB_OFFLINE": "1"}
    with open(tmp_path / "serve.log", "w") as log:
        server = start_serve(port, env, log, "--workers", "2", "--book", str(SAMPLE_BOOK))
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, server, timeout_s=180, path="/v1/health")
            statuses, workers = [], set()
            for _ in range(LIMIT + 4):  # a new connection each time: the workers share them
                with httpx.Client(timeout=60) as client:
                    workers.add(client.get(f"{url}/v1/health", headers={
                        "Authorization": f"Bearer {TOKEN}"}).json()["process"])
                    reply = client.post(f"{url}/v1/ask", json={"question": "What is ZMP?"},
                                        headers={"Authorization": f"Bearer {TOKEN}"})
                statuses.append(reply.status_code)
                if reply.status_code == 429:
                    assert int(reply.headers["Retry-After"]) >= 1
            assert statuses.count(200) == LIMIT and statuses.count(429) == 4, statuses
            assert 1 <= len(workers) <= 2
        finally:
            stop_group(server, timeout_s=60)
    text = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in text and "searching a read-only copy" in text, text[-2000:]
    deadline = time.monotonic() + 10
    with AuditStore(audit_db) as store:
        while store.count_logs() < LIMIT and time.monotonic() < deadline:
            time.sleep(0.2)
        rows = store.query_logs(limit=50)
    assert len(rows) == LIMIT and set(rows["client_id"]) == {"reader"}
