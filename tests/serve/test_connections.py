"""The real `python -m rag serve` against hostile connections (issue 43, made small): a
connection that sends nothing or half a request line is closed, connections over the cap get a
clean 503 while the process stays far from its file-descriptor limit (no `Errno 24`), the log
stays short, and no token reaches it in any form."""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import time

import httpx
import pytest

from tests.builders import free_port, start_serve, stop_group, uvicorn_thread, wait_healthy

TOKEN = "hygiene-test-token-0123456789"
SECRET = "query-token-abcdef0123456789"
HEAD_TIMEOUT_S = 1.0
FD_LIMIT = 256  # the cap becomes (256 - 128) / 2 = 64 connections


def limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


@pytest.fixture(scope="module")
def server(sample_index, sample_index_dir, tmp_path_factory):
    work = tmp_path_factory.mktemp("hygiene")
    shutil.copytree(sample_index_dir, work / "index", ignore=shutil.ignore_patterns(".lock"))
    port, log_path = free_port(), work / "serve.log"
    env = {**os.environ, "RAG_INDEX_DIR": str(work / "index"),
           "RAG_AUDIT_DB": str(work / "audit.duckdb"), "RAG_API_KEYS": f"reader:{TOKEN}",
           "RAG_LLM": "extractive", "HF_HUB_OFFLINE": "1"}
    with open(log_path, "w") as log:
        process = start_serve(port, env, log, "--head-timeout", str(HEAD_TIMEOUT_S),
                              "--log-level", "info", preexec_fn=limit_descriptors)
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, process, 180, "/v1/health", log_path)
            yield url, port, log_path
        finally:
            stop_group(process, timeout_s=60)


def closed_after(sock: socket.socket, started: float, limit_s: float = 10
                 ) -> tuple[float, bytes]:
    """Seconds from `started` until the server closed `sock`, and what it sent before."""
    sock.settimeout(limit_s)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return time.monotonic() - started, received


def test_silent_and_partial_connections_are_closed(server):
    _, port, _ = server
    started = time.monotonic()
    silent = socket.create_connection(("127.0.0.1", port))
    partial = socket.create_connection(("127.0.0.1", port))
    partial.sendall(b"GET /v1/hea")
    for sock, expected in ((silent, b""), (partial, b"HTTP/1.1 408")):
        took, received = closed_after(sock, started)
        sock.close()
        assert HEAD_TIMEOUT_S * 0.8 <= took < HEAD_TIMEOUT_S + 4, (took, received)
        assert received.startswith(expected)
    # a kept-alive connection gets the same limit for its next request
    with socket.create_connection(("127.0.0.1", port)) as kept:
        kept.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert kept.recv(4096).startswith(b"HTTP/1.1 200")
        kept.sendall(b"GET /v1/hea")
        took, received = closed_after(kept, time.monotonic())
        assert took < HEAD_TIMEOUT_S + 4 and b"HTTP/1.1 408" in received


def test_connections_over_the_cap_get_503_and_descriptors_never_run_out(server):
    """400 connections at once against a process allowed 256 descriptors: each is either
    answered 503 at once (over the cap of 64) or held and closed at the head timeout; the
    process never runs out (no `Errno 24`), stays responsive, and its log stays short."""
    url, port, log_path = server
    opened = [socket.create_connection(("127.0.0.1", port)) for _ in range(400)]
    endings = []
    for sock in opened:
        took, received = closed_after(sock, time.monotonic(), limit_s=30)
        endings.append(received[:12])
        sock.close()
    # the listen backlog is small too, so the kernel makes the rest wait for room
    assert endings.count(b"HTTP/1.1 503") + endings.count(b"") == 400, set(endings)
    t0 = time.monotonic()
    assert httpx.get(f"{url}/v1/health", timeout=10).status_code == 200
    assert time.monotonic() - t0 < 1.0
    text = log_path.read_text()
    assert "Errno 24" not in text and "Too many open files" not in text
    assert "Traceback" not in text and text.count("Refused") <= 2
    assert len(text) < 20_000


def test_no_token_is_ever_logged(server):
    url, _, log_path = server
    auth = {"Authorization": f"Bearer {TOKEN}"}
    httpx.get(f"{url}/v1/health?token={SECRET}", timeout=10)
    httpx.get(f"{url}/v1/health", params={"api_key": TOKEN}, timeout=10)
    httpx.get(f"{url}/{SECRET}", timeout=10)
    httpx.get(f"{url}/v1/{TOKEN}/ask", timeout=10)
    reply = httpx.post(f"{url}/v1/ask?token={TOKEN}", headers=auth, timeout=60,
                       json={"question": "What is the zero moment point?"})
    assert reply.status_code == 200
    time.sleep(0.5)
    text = log_path.read_text()
    assert TOKEN not in text and SECRET not in text
    assert '"POST /v1/ask HTTP/1.1" 200' in text and "[another path]" in text


def test_one_connection_over_the_cap_gets_a_clean_503(monkeypatch):
    from fastapi import FastAPI

    from rag.serve.server import GuardedH11, Limits

    monkeypatch.setattr(GuardedH11, "limits", Limits(max_connections=5, head_timeout_s=10))
    with uvicorn_thread(FastAPI()) as url:
        port = int(url.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(5)]
        time.sleep(0.3)
        with socket.create_connection(("127.0.0.1", port)) as extra:
            took, received = closed_after(extra, time.monotonic())
        for sock in held:
            sock.close()
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 503") and b"retry-after: 1" in head and took < 2
    assert json.loads(body)["error"] == "server_busy"
