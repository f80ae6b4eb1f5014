"""CohereReranker through the real cohere SDK against a loopback fake of POST /v2/rerank, and
the re-ranking stage's fallback when Cohere fails (the hybrid order, with a notice)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

import rag.config
from rag.errors import ConfigError, ProviderError
from rag.notices import RERANK_FAILED
from rag.providers.base import network_deadline
from rag.providers.cohere_reranker import CohereReranker
from rag.retrieval import rerank as rerank_module
from rag.retrieval.search import search_book
from tests.fakes.cohere_server import CohereServer

KALMAN = "How does a Kalman filter decide whether to believe its prediction or a new reading?"


@pytest.fixture
def server() -> Iterator[CohereServer]:
    with CohereServer() as fake:
        yield fake


def make(url: str, **options: object) -> CohereReranker:
    return CohereReranker(api_key="test-key", base_url=url, sleep=lambda s: None, **options)


def test_scores_come_back_in_the_texts_order(server: CohereServer) -> None:
    texts = ["bread flour water", "the kalman filter gain", "kalman filter prediction gain"]
    scores = make(server.url).score("kalman filter gain", texts)
    assert scores == pytest.approx([0.0, 1.0, 1.0])  # the fake returns them best first
    body = server.rerank_requests[0].body
    assert body["model"] == "rerank-v3.5" and body["query"] == "kalman filter gain"
    assert body["documents"] == texts and body["max_tokens_per_doc"] == 1024
    assert server.rerank_requests[0].headers["authorization"] == "Bearer test-key"


def test_no_texts_no_request(server: CohereServer) -> None:
    assert make(server.url).score("anything", []) == []
    assert server.rerank_requests == []


def test_a_missing_key_says_how_to_set_it(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    monkeypatch.setattr(rag.config, "PROJECT_ROOT", tmp_path)
    with pytest.raises(ConfigError, match="COHERE_API_KEY.*rerank"):
        CohereReranker()


@pytest.mark.parametrize("status, words", [(500, "failed"), (401, "rejected the API key"),
                                           (429, "rate limit")])
def test_service_errors_are_reported_for_rerank(server: CohereServer, status: int,
                                                words: str) -> None:
    for _ in range(3):
        server.plan(status=status)
    with pytest.raises(ProviderError, match=words) as e:
        make(server.url).score("q", ["a text"])
    assert "RAG_EMBEDDER" not in str(e.value)


def test_a_response_that_leaves_out_texts_is_refused(server: CohereServer) -> None:
    server.plan(body={"id": "x", "results": [{"index": 0, "relevance_score": 0.9}]})
    with pytest.raises(ProviderError, match="left out 1 of 2"):
        make(server.url).score("q", ["a", "b"])


def test_a_slow_service_gives_up_inside_the_deadline(server: CohereServer) -> None:
    server.plan(delay=3.0)
    server.plan(delay=3.0)
    with network_deadline(0.6), pytest.raises(ProviderError, match="did not answer|run out"):
        make(server.url).score("q", ["a text"])


def test_search_book_reranks_with_cohere(server: CohereServer, sample_index, sample_settings,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(rerank_module._COHERE, "rerank-v3.5", make(server.url))
    base = sample_settings.retrieval
    plain = search_book(sample_index, KALMAN, base)
    reranked = search_book(sample_index, KALMAN, dataclasses.replace(base, rerank="cohere"))
    sent = server.rerank_requests[0].body["documents"]
    passing = [h for h in plain.candidates[: base.rerank_depth] if h.passed]
    assert len(sent) == len(passing)
    scored = [h for h in reranked.candidates if h.rerank is not None]
    assert len(scored) == len(passing) and all(h.rank_before is not None for h in scored)
    assert {h.chunk.chunk_id for h in scored} == {h.chunk.chunk_id for h in passing}
    assert not any(n.code == RERANK_FAILED for n in reranked.notices)
    assert "rerank_ms" in reranked.latency_ms


def test_cohere_failure_keeps_the_hybrid_order_with_a_notice(
        server: CohereServer, sample_index, sample_settings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(rerank_module._COHERE, "rerank-v3.5",
                        make(server.url, max_retries=0))
    server.plan(status=503)
    base = sample_settings.retrieval
    plain = search_book(sample_index, KALMAN, base)
    failed = search_book(sample_index, KALMAN, dataclasses.replace(base, rerank="cohere"))
    assert [h.chunk.chunk_id for h in failed.hits] == [h.chunk.chunk_id for h in plain.hits]
    notice = next(n for n in failed.notices if n.code == RERANK_FAILED)
    assert "503" in notice.message and "hybrid order was kept" in notice.message
    assert notice.kind == "fallback"
