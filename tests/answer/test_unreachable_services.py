"""Cohere down or silent: a question falls back to BM25 within the retrieval budget, and a
`rag ask` against a server that never answers ends in seconds, interpreter exit included."""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rag.answer.pipeline import WARM_UP_S, Pipeline
from rag.config import PROJECT_ROOT
from rag.providers.cohere_embedder import CohereEmbedder
from tests.builders import SAMPLE_BOOK, free_port
from tests.fakes.cohere_server import CohereServer

PID_QUESTION = "How are the gains of a PID controller tuned on a real joint?"


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """A URL whose server accepts connections and never reads or replies."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except (TimeoutError, OSError):
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


def cohere_pipeline(sample_index, sample_settings, url: str) -> Pipeline:
    cohere = CohereEmbedder(api_key="test-key", base_url=url)
    return Pipeline(dataclasses.replace(sample_index, embedder=cohere), sample_settings)


def assert_bm25_fallback(response, budget_s: float) -> None:
    assert response.status == "partial", (response.error_stage, response.error_message)
    (notice,) = response.validation["notices"]
    assert notice["code"] == "dense_unavailable"
    assert "Cohere" in notice["message"]
    assert response.retrieval.settings.w_dense == 0.0 and response.citations
    assert response.metadata["latency_ms"]["retrieval"] < budget_s * 1000


def test_unreachable_cohere_falls_back_to_bm25_within_the_retrieval_budget(
        sample_index, sample_settings) -> None:
    pipeline = cohere_pipeline(sample_index, sample_settings, f"http://127.0.0.1:{free_port()}")
    started = time.perf_counter()
    response = pipeline.answer(PID_QUESTION)
    elapsed = time.perf_counter() - started
    assert_bm25_fallback(response, sample_settings.budget_retrieval_s)
    assert elapsed < sample_settings.budget_total_s, elapsed


def test_silent_cohere_is_bounded_at_warm_up_and_per_question(sample_index,
                                                             sample_settings) -> None:
    with silent_endpoint() as url:
        started = time.perf_counter()
        pipeline = cohere_pipeline(sample_index, sample_settings, url)
        warm_up = time.perf_counter() - started
        response = pipeline.answer(PID_QUESTION)
    assert warm_up < WARM_UP_S + 1.0, warm_up
    assert_bm25_fallback(response, sample_settings.budget_retrieval_s)


def folio_env(tmp_path: Path, **names: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_", "COHERE_",
                                                                      "ANTHROPIC_"))}
    return {**env, "RAG_BOOK": str(SAMPLE_BOOK), "RAG_INDEX_DIR": str(tmp_path / "index"),
            "RAG_AUDIT_DB": str(tmp_path / "audit.duckdb"), "RAG_EMBEDDER": "cohere",
            "COHERE_API_KEY": "test-key", **names}


@pytest.fixture(scope="module")
def cohere_index(tmp_path_factory) -> Path:
    """The sample book indexed through the Cohere fake, for `rag ask` to load."""
    tmp_path = tmp_path_factory.mktemp("cohere-index")
    with CohereServer() as fake:
        result = subprocess.run([sys.executable, "-m", "rag", "ingest"], capture_output=True,
                                text=True, timeout=300, cwd=PROJECT_ROOT,
                                env=folio_env(tmp_path, COHERE_BASE_URL=fake.url))
    assert result.returncode == 0, result.stderr
    return tmp_path


@pytest.mark.parametrize("silent", [("COHERE_BASE_URL",),
                                    ("COHERE_BASE_URL", "ANTHROPIC_BASE_URL")])
def test_rag_ask_against_a_silent_server_ends_within_10_s(cohere_index: Path,
                                                          silent: tuple[str, ...]) -> None:
    with silent_endpoint() as url:
        extra = {name: url for name in silent}
        if "ANTHROPIC_BASE_URL" in silent:
            extra.update(RAG_LLM="anthropic", ANTHROPIC_API_KEY="test-key")
        started = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "rag", "ask", PID_QUESTION, "--no-audit"],
                                capture_output=True, text=True, timeout=120, cwd=PROJECT_ROOT,
                                env=folio_env(cohere_index, **extra))
        wall = time.perf_counter() - started
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert "BM25-only results" in result.stdout
    if silent == ("COHERE_BASE_URL",):
        assert wall < 10.0, (wall, result.stderr)  # 5.9 s measured on a loaded 2-core machine
    else:
        # 8.6-9.3 s measured: 5 s of question budget is spent waiting on the two silent
        # services (1.6 s retrieval + 2 s synthesis, then extractive), plus start-up; 12.4 s
        # once at load average 4.7 on 2 cores, hence the margin. Before the fix: 218 s.
        assert "Answered from the book's own sentences instead" in result.stdout
        assert wall < 15.0, (wall, result.stderr)
