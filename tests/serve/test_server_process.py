"""The real `python -m rag serve` on a loopback port, spoken to over HTTP with httpx: keys, a
JSON answer, a streamed answer through Claude (a loopback fake of the Messages API) whose client
disconnects mid-stream, and the refusal to listen publicly without keys."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from rag.audit.store import AuditStore
from rag.config import PROJECT_ROOT
from rag.notices import CLIENT_DISCONNECTED
from tests.builders import free_port, start_serve, stop_group, wait_healthy
from tests.fakes.anthropic_server import AnthropicServer

TOKEN = "process-test-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
START_TIMEOUT_S = 120


class Server:
    def __init__(self, work: Path, index_dir: Path, claude_url: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.audit_db = work / "audit.duckdb"
        self.log_path = work / "serve.log"
        env = {**os.environ, "RAG_INDEX_DIR": str(index_dir), "RAG_AUDIT_DB": str(self.audit_db),
               "RAG_API_KEYS": f"docs-widget:{TOKEN}", "RAG_RATE_LIMIT": "1000",
               "RAG_LLM": "anthropic", "ANTHROPIC_API_KEY": "sk-fake-for-the-loopback",
               "ANTHROPIC_BASE_URL": claude_url, "HF_HUB_OFFLINE": "1"}
        self._log = open(self.log_path, "w")  # noqa: SIM115  (closed in stop)
        self.process = start_serve(self.port, env, self._log)

    def wait_healthy(self) -> None:
        wait_healthy(self.url, self.process, START_TIMEOUT_S, "/v1/health", self.log_path)

    def stop(self) -> int:
        """SIGTERM (uvicorn's graceful shutdown; the app closes the audit); its exit code."""
        code = stop_group(self.process)
        self._log.close()
        return code


@pytest.fixture(scope="module")
def claude():
    with AnthropicServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def server(sample_index, sample_index_dir, tmp_path_factory, claude):
    work = tmp_path_factory.mktemp("serve-process")
    # embedded Qdrant admits one process per folder, and this one holds the sample index
    shutil.copytree(sample_index_dir, work / "index", ignore=shutil.ignore_patterns(".lock"))
    running = Server(work, work / "index", claude.url)
    try:
        running.wait_healthy()
        yield running
    finally:
        running.stop()


def test_keys_and_a_json_answer_over_http(server):
    assert httpx.get(f"{server.url}/v1/health").json() == {"status": "ok"}
    health = httpx.get(f"{server.url}/v1/health", headers=AUTH).json()
    assert health["status"] == "ok" and health["llm"] == "anthropic" and health["auth"] == "bearer"
    question = {"question": "How does the integral term remove steady-state error?"}
    refused = httpx.post(f"{server.url}/v1/ask", json=question)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    reply = httpx.post(f"{server.url}/v1/ask", json={**question, "session_id": "json-1"},
                       headers=AUTH, timeout=30)
    assert reply.status_code == 200, reply.text
    record = reply.json()
    assert record["llm_provider"] == "anthropic" and record["status"] != "error"


def test_health_stays_quick_while_the_issues_slow_question_is_answered(server):
    """Issue 43's reproduction: this question took 21 s of one regex and stalled /v1/health for
    20.8 s. Answered in an answering process, health answers within a second all along,
    whatever the regex costs."""
    import threading

    question = "What" + " " * 990 + "is ZMP"
    done = threading.Event()

    def ask() -> None:
        httpx.post(f"{server.url}/v1/ask", json={"question": question}, headers=AUTH,
                   timeout=60)
        done.set()

    asking = threading.Thread(target=ask)
    asking.start()
    waits = []
    while not done.is_set() and len(waits) < 20:
        t0 = time.monotonic()
        assert httpx.get(f"{server.url}/v1/health", timeout=10).status_code == 200
        waits.append(time.monotonic() - t0)
        time.sleep(0.2)
    asking.join(60)
    assert waits and max(waits) < 1.0, waits


def test_a_client_that_disconnects_mid_stream_is_still_logged(server, claude):
    claude.plan(stall=1.5)  # the reply stops for 1.5 s after its first delta
    body = {"question": "How does the integral term remove steady-state error?",
            "stream": True, "session_id": "gone-1"}
    lines = []
    with httpx.Client(timeout=30) as client, \
            client.stream("POST", f"{server.url}/v1/ask", json=body, headers=AUTH) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            lines.append(line)
            if line.startswith("data:") and lines[-2:-1] == ["event: delta"]:
                break  # one delta read: hang up while Claude is still writing
    assert "event: final" not in lines
    time.sleep(2.5)  # the answer goes on without its client (stall 1.5 s, then the rest)
    assert server.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises SIGTERM once shut down
    with AuditStore(server.audit_db) as store:
        store.flush()
        rows = store.query_logs(limit=50)
        gone = rows[rows["session_id"] == "gone-1"]
        assert len(gone) == 1 and (rows["session_id"] == "json-1").sum() == 1
        row = store.get_log(gone["log_id"].iloc[0])
    assert row["client_id"] == "docs-widget" and row["answer_text"]
    assert CLIENT_DISCONNECTED in [n["code"] for n in row["notices"]]
    log = server.log_path.read_text()
    assert "Traceback" not in log and TOKEN not in log


def test_no_keys_means_no_public_address():
    env = {**os.environ, "RAG_API_KEYS": "", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "rag", "serve", "--host", "0.0.0.0"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "no API keys configured: listening on localhost only" in done.stderr
    assert "0.0.0.0" in done.stderr and "Traceback" not in done.stderr

