"""The re-ranking stage: the mix by hand, the cut again after it, rank before and after, the
offline re-ranker on the real sample book, and "off" changing nothing."""

from __future__ import annotations

import dataclasses

import numpy as np

from rag.errors import ProviderError
from rag.notices import RERANK_FAILED
from rag.retrieval.hybrid import (
    REASON_BELOW,
    REASON_BEYOND,
    CandidatePool,
    collect_candidates,
    rank_candidates,
)
from rag.retrieval.rerank import OfflineReranker, apply_rerank, rerank
from rag.retrieval.search import search_book
from rag.types import Chunk, RetrievalSettings

KALMAN = "How does a Kalman filter decide whether to believe its prediction or a new reading?"


def pool(dense: list[float]) -> CandidatePool:
    chunks = tuple(Chunk(chunk_id=f"c{i}", text=f"text {i}", module_id="m", chapter_id="c",
                         section_id=f"s{i}", section_title=f"S{i}", chapter_title="C",
                         heading_path=("C",), stable=True, page=None, ordinal=0, token_count=2)
                   for i in range(len(dense)))
    return CandidatePool(query="q", chunks=chunks, dense=np.array(dense, np.float32),
                         bm25_raw=np.zeros(len(dense), np.float32), bm25_max=0.0)


class Fixed:
    name = "fixed"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores, self.seen = scores, []

    def score_hits(self, pool, hits):
        self.seen.append([h.chunk.chunk_id for h in hits])
        return [self.scores[h.chunk.chunk_id] for h in hits]


def settings(**changes) -> RetrievalSettings:
    values = {"threshold": 0.5, "top_k": 2, "rerank": "offline", "rerank_weight": 0.5}
    return RetrievalSettings(1.0, **{**values, **changes})


def test_the_mix_by_hand_and_the_cut_again() -> None:
    p = pool([0.9, 0.8, 0.7, 0.6, 0.2])
    s = settings()
    before = rank_candidates(p, s)
    assert [h.chunk.chunk_id for h in before.hits] == ["c0", "c1"]
    fixed = Fixed({"c0": 0.1, "c1": 0.2, "c2": 1.0, "c3": 0.9})
    after = rerank(before, p, reranker=fixed)
    # 0.5 x blended + 0.5 x score: c0 0.5, c1 0.5, c2 0.85, c3 0.75; c4 is below the threshold
    assert fixed.seen == [["c0", "c1", "c2", "c3"]]
    assert [h.chunk.chunk_id for h in after.candidates] == ["c2", "c3", "c0", "c1", "c4"]
    assert [h.chunk.chunk_id for h in after.hits] == ["c2", "c3"]
    by = {h.chunk.chunk_id: h for h in after.candidates}
    assert (by["c2"].rank, by["c2"].rank_before, by["c2"].moved) == (1, 3, "in")
    assert (by["c0"].rank, by["c0"].rank_before, by["c0"].moved) == (3, 1, "out")
    assert by["c0"].reason == REASON_BEYOND and by["c4"].reason == REASON_BELOW
    assert by["c4"].rerank is None and by["c2"].rerank == 1.0
    assert by["c0"].blended == 0.9  # the blended score itself is never changed


def test_depth_limits_what_is_rescored() -> None:
    p = pool([0.9, 0.8, 0.7, 0.6])
    fixed = Fixed({"c0": 0.0, "c1": 1.0, "c2": 1.0, "c3": 1.0})
    after = rerank(rank_candidates(p, settings(rerank_depth=2)), p, reranker=fixed)
    assert fixed.seen == [["c0", "c1"]]
    assert [h.chunk.chunk_id for h in after.candidates] == ["c1", "c0", "c2", "c3"]


def test_weight_zero_keeps_the_order_and_off_does_nothing() -> None:
    p = pool([0.9, 0.8, 0.7])
    before = rank_candidates(p, settings())
    same = apply_rerank(dataclasses.replace(before, settings=settings(rerank_weight=0.0)),
                        {"c0": 0.0, "c1": 1.0, "c2": 1.0})
    assert [h.chunk.chunk_id for h in same.candidates] == ["c0", "c1", "c2"]
    off = rank_candidates(p, settings(rerank="off"))
    assert rerank(off, p, reranker=Fixed({})) is off


def test_nothing_passing_is_not_reranked() -> None:
    p = pool([0.3, 0.2])
    before = rank_candidates(p, settings())
    assert rerank(before, p, reranker=Fixed({})) is before


def test_a_failing_reranker_keeps_the_order_with_a_notice() -> None:
    class Broken:
        name = "broken"

        def score_hits(self, pool, hits):
            raise ProviderError("The re-ranker is down.")

    p = pool([0.9, 0.8])
    before = rank_candidates(p, settings())
    after = rerank(before, p, reranker=Broken())
    assert after.candidates == before.candidates
    assert [n.code for n in after.notices] == [RERANK_FAILED]
    assert "rerank_ms" in after.latency_ms


def test_offline_reranker_on_the_sample_book(sample_index, sample_settings) -> None:
    s = dataclasses.replace(sample_settings.retrieval, rerank="offline")
    p = collect_candidates(sample_index, KALMAN, s.candidate_pool)
    hits = [h for h in rank_candidates(p, s).candidates if h.passed][:10]
    scores = OfflineReranker(sample_index).score_hits(p, hits)
    assert len(scores) == len(hits) and all(0.0 <= x <= 1.0 for x in scores)
    best = hits[int(np.argmax(scores))]
    assert "kalman" in (best.chunk.section_title + best.chunk.text).lower()
    result = search_book(sample_index, KALMAN, s)
    assert any(h.rerank is not None for h in result.candidates)
    assert result.latency_ms["rerank_ms"] < 1000  # measured in bench/, bounded here
    assert len(result.hits) <= s.top_k


def test_offline_reranker_without_sentence_vectors_uses_terms(sample_index) -> None:
    index = dataclasses.replace(sample_index, sentences=None)
    p = collect_candidates(index, KALMAN, 10)
    hits = rank_candidates(p, RetrievalSettings(0.9, threshold=0.0)).candidates[:5]
    scores = OfflineReranker(index).score_hits(p, hits)
    assert len(scores) == 5 and max(scores) > 0 and all(x <= 0.5 for x in scores)
