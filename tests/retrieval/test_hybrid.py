"""Hybrid retrieval: hand-computed blends, cut-offs with reasons, the candidate union, faults."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag.book.chunk import embed_text_for
from rag.errors import ConfigError, InputError, ProviderError
from rag.index.vectors import VectorStore
from rag.retrieval.hybrid import (
    REASON_BELOW,
    REASON_BEYOND,
    REASON_DUPLICATE,
    CandidatePool,
    blend_scores,
    check_weights,
    collect_candidates,
    pool_from_record,
    pool_to_record,
    rank_candidates,
    retrieve,
)
from rag.retrieval.query import validate_query
from rag.types import Chunk, RetrievalSettings

KALMAN = "How does a Kalman filter decide whether to believe its prediction or a new reading?"


def chunk(name: str, section: str | None = None) -> Chunk:
    return Chunk(chunk_id=name, text=f"text of {name}", module_id="m", chapter_id="c",
                 section_id=section or name, section_title=name, chapter_title="C",
                 heading_path=("C", name), stable=True, page=None, ordinal=0, token_count=3)


def pool(dense: list[float], bm25_raw: list[float], bm25_max: float,
         sections: list[str] | None = None) -> CandidatePool:
    names = [f"c{i}" for i in range(len(dense))]
    chunks = tuple(chunk(n, s) for n, s in zip(names, sections or names, strict=True))
    return CandidatePool(query="q", chunks=chunks, dense=np.array(dense, dtype=np.float32),
                         bm25_raw=np.array(bm25_raw, dtype=np.float32), bm25_max=bm25_max)


def by_id(result) -> dict[str, object]:
    return {h.chunk.chunk_id: h for h in result.candidates}


# ---- scoring by hand ---------------------------------------------------------------------

def test_blend_by_hand() -> None:
    # bm25 = raw / book max = [2, 4, 0] / 4 = [0.5, 1, 0]
    # blended = 0.85 * dense + 0.15 * bm25 = [0.765 + 0.075, 0.425 + 0.15, 0.17 + 0] = ...
    p = pool([0.9, 0.5, 0.2], [2, 4, 0], bm25_max=4)
    assert p.bm25.tolist() == [0.5, 1.0, 0.0]
    assert blend_scores(p.dense, p.bm25, 0.85) == pytest.approx([0.84, 0.575, 0.17], abs=1e-6)
    result = rank_candidates(p, RetrievalSettings(0.85, threshold=0.5, top_k=5))
    assert [(h.chunk.chunk_id, h.blended, h.rank) for h in result.candidates] == [
        ("c0", 0.84, 1), ("c1", 0.575, 2), ("c2", 0.17, 3)]
    c1 = by_id(result)["c1"]
    assert (c1.dense, c1.bm25_raw, c1.bm25) == (0.5, 4.0, 1.0)


def test_bm25_is_normalised_by_the_book_maximum_not_the_pool() -> None:
    # The best BM25 chunk in the book (raw 8) is not among these candidates.
    p = pool([0.9, 0.5, 0.2], [2, 4, 0], bm25_max=8)
    assert p.bm25.tolist() == [0.25, 0.5, 0.0]
    result = rank_candidates(p, RetrievalSettings(0.85, threshold=0.0))
    # 0.85 * [0.9, 0.5, 0.2] + 0.15 * [0.25, 0.5, 0] = [0.8025, 0.5, 0.17]
    assert [h.blended for h in result.candidates] == pytest.approx([0.8025, 0.5, 0.17])


def test_no_bm25_match_means_bm25_zero() -> None:
    p = pool([0.6, 0.4], [0, 0], bm25_max=0.0)
    assert p.bm25.tolist() == [0.0, 0.0]
    result = rank_candidates(p, RetrievalSettings(0.85, threshold=0.0))
    assert [h.blended for h in result.candidates] == pytest.approx([0.51, 0.34])


@pytest.mark.parametrize(("w_dense", "expected"), [
    (1.0, [0.9, 0.5, 0.2]),  # dense only
    (0.0, [0.5, 1.0, 0.0]),  # BM25 only: the order flips
    (0.5, [0.7, 0.75, 0.1]),
])
def test_blend_at_the_extremes(w_dense: float, expected: list[float]) -> None:
    p = pool([0.9, 0.5, 0.2], [2, 4, 0], bm25_max=4)
    assert blend_scores(p.dense, p.bm25, w_dense) == pytest.approx(expected)


@pytest.mark.parametrize(("w_dense", "w_bm25"), [(0.7, 0.2), (0.9, 0.2), (1.2, -0.2),
                                                 (-0.1, 1.1)])
def test_weights_must_be_in_range_and_sum_to_one(w_dense: float, w_bm25: float) -> None:
    with pytest.raises(ConfigError, match="sum to 1"):
        check_weights(w_dense, w_bm25)
    with pytest.raises(ConfigError):
        blend_scores(np.zeros(2), np.zeros(2), w_dense, w_bm25)


def test_out_of_range_dense_weight_is_refused_when_ranking() -> None:
    with pytest.raises(ConfigError, match="between 0 and 1"):
        rank_candidates(pool([0.5], [1], 1), RetrievalSettings(w_dense=1.5))


def test_threshold_one_chunk_per_section_and_top_k_with_reasons() -> None:
    #            dense: c0   c1   c2   c3   c4   c5     (bm25 all 0: blended = 0.85 * dense)
    p = pool([1.0, 0.9, 0.8, 0.7, 0.6, 0.3], [0] * 6, bm25_max=0,
             sections=["A", "A", "B", "C", "D", "E"])
    result = rank_candidates(p, RetrievalSettings(0.85, threshold=0.5, top_k=3))
    reasons = {h.chunk.chunk_id: (h.passed, h.selected, h.reason) for h in result.candidates}
    assert reasons == {
        "c0": (True, True, ""),
        "c1": (True, False, REASON_DUPLICATE),  # section A already has c0
        "c2": (True, True, ""),
        "c3": (True, True, ""),
        "c4": (True, False, REASON_BEYOND),  # 0.51 passes, but three hits are already chosen
        "c5": (False, False, REASON_BELOW),  # 0.255 < 0.5
    }
    assert [h.chunk.chunk_id for h in result.hits] == ["c0", "c2", "c3"]
    assert result.best_score == pytest.approx(0.85)


def test_threshold_is_inclusive_and_ties_keep_pool_order() -> None:
    p = pool([0.5, 0.5, 0.4], [0, 0, 0], bm25_max=0)
    result = rank_candidates(p, RetrievalSettings(1.0, threshold=0.5))
    assert [h.chunk.chunk_id for h in result.hits] == ["c0", "c1"]
    assert [h.rank for h in result.candidates] == [1, 2, 3]


def test_a_pool_re_ranks_identically_from_its_record() -> None:
    p = pool([0.9, 0.5, 0.2], [2, 4, 0], bm25_max=8, sections=["A", "B", "C"])
    settings = RetrievalSettings(0.7, threshold=0.3, top_k=2)
    first = rank_candidates(p, settings)
    again = rank_candidates(pool_from_record(pool_to_record(first)), settings)
    assert [(h.chunk.chunk_id, h.blended, h.reason) for h in again.candidates] == \
        [(h.chunk.chunk_id, h.blended, h.reason) for h in first.candidates]


# ---- query validation --------------------------------------------------------------------

@pytest.mark.parametrize(("query", "message"), [
    ("", "The question is empty"),
    (" \t\n ", "The question is empty"),
    ("x" * 1001, "has 1001 characters; the limit is 1000"),
    ("balance\x00control", "contains a NUL byte"),
    (b"caf\xe9 robots", "not valid UTF-8"),
    ("lone \ud800 surrogate", "not valid UTF-8"),
])
def test_bad_queries_are_refused_in_plain_words(query, message: str) -> None:
    with pytest.raises(InputError, match=message):
        validate_query(query)


def test_good_queries_pass_trimmed() -> None:
    assert validate_query("  what is a ZMP?  ") == "what is a ZMP?"
    assert validate_query("x" * 1000) == "x" * 1000
    assert validate_query("café ロボット".encode()) == "café ロボット"


def test_retrieve_validates_before_any_work(sample_index) -> None:
    with pytest.raises(InputError, match="empty"):
        retrieve(sample_index, "   ", RetrievalSettings())


# ---- against the indexed sample book ------------------------------------------------------

def test_candidates_are_dense_top_n_union_bm25_top_n(sample_index, embedder) -> None:
    n = 5
    query = "complementary filter blending factor for gyroscope and accelerometer at 500 Hz"
    vector = embedder.embed_query(query)
    dense_top = [cid for cid, _ in sample_index.store.search(sample_index.collection, vector, n)]
    raw = sample_index.lexical.scores(query)
    bm25_top = [sample_index.chunks[i].chunk_id for i in np.argsort(-raw, kind="stable")[:n]
                if raw[i] > 0]
    result = collect_candidates(sample_index, query, pool_size=n)
    assert {c.chunk_id for c in result.chunks} == set(dense_top) | set(bm25_top)
    bm25_only = [cid for cid in bm25_top if cid not in dense_top]
    assert bm25_only, "pick a query where BM25 brings in chunks dense search missed"

    # Every BM25-only candidate carries its real cosine, from its stored vector.
    chunks = {c.chunk_id: c for c in sample_index.chunks}
    texts = [embed_text_for(chunks[cid].heading_path, chunks[cid].text) for cid in bm25_only]
    direct = np.clip(embedder.embed_documents(texts) @ vector, 0, 1)
    dense = dict(zip((c.chunk_id for c in result.chunks), result.dense, strict=True))
    assert [dense[cid] for cid in bm25_only] == pytest.approx(direct.tolist(), abs=1e-4)
    assert all(dense[cid] > 0 for cid in bm25_only)
    # ... and every candidate its real BM25 and the book-wide maximum.
    positions = [sample_index.positions[c.chunk_id] for c in result.chunks]
    assert result.bm25_raw.tolist() == pytest.approx(raw[positions].tolist())
    assert result.bm25_max == pytest.approx(float(raw.max()))


def test_candidate_pool_size_bounds_the_union(sample_index) -> None:
    result = collect_candidates(sample_index, KALMAN, pool_size=50)
    assert 50 <= len(result.chunks) <= 100
    assert len({c.chunk_id for c in result.chunks}) == len(result.chunks)


def test_retrieval_finds_the_labelled_section(sample_index, sample_settings) -> None:
    result = retrieve(sample_index, KALMAN, sample_settings.retrieval)
    assert result.candidates[0].chunk.section_ref == "sensor-fusion#kalman-intuition"
    assert result.hits and result.hits[0].chunk.section_ref == "sensor-fusion#kalman-intuition"
    blended = [h.blended for h in result.candidates]
    assert blended == sorted(blended, reverse=True)
    assert all(0.0 <= h.dense <= 1.0 and 0.0 <= h.bm25 <= 1.0 for h in result.candidates)
    assert set(result.latency_ms) >= {"embed_ms", "dense_ms", "bm25_ms", "fetch_ms", "rank_ms"}


def test_candidates_carry_both_components(sample_index, sample_settings) -> None:
    result = retrieve(sample_index, KALMAN, sample_settings.retrieval)
    w, w_terms = result.settings.w_dense, result.settings.w_terms
    for h in result.candidates:  # the blend exactly as displayed, term match included
        hybrid = w * h.dense + (1 - w) * h.bm25
        assert h.blended == pytest.approx((1 - w_terms) * hybrid + w_terms * h.terms, abs=2e-6)
        assert h.bm25 == pytest.approx(h.bm25_raw / result.bm25_max, abs=1e-5)
    assert any(h.bm25 == pytest.approx(1.0) for h in result.candidates)


def test_qdrant_unavailable_falls_back_to_bm25_with_a_notice(sample_index) -> None:
    from qdrant_client import QdrantClient

    empty = VectorStore(QdrantClient(location=":memory:"), ":memory:")  # no such collection
    broken = dataclasses.replace(sample_index, store=empty)
    try:
        result = retrieve(broken, KALMAN, RetrievalSettings(0.85, threshold=0.1))
    finally:
        empty.close()
    assert [n.code for n in result.notices] == ["dense_unavailable"]
    assert result.notices[0].degraded and "BM25-only" in result.notices[0].message
    assert result.candidates and all(h.dense == 0.0 for h in result.candidates)
    assert all(h.bm25_raw > 0 for h in result.candidates)
    assert result.candidates[0].bm25 == 1.0
    assert result.hits[0].chunk.section_ref == "sensor-fusion#kalman-intuition"


def test_embedder_failure_also_falls_back_to_bm25(sample_index, monkeypatch) -> None:
    class FailingEmbedder:
        def embed_query(self, text: str) -> np.ndarray:
            raise ProviderError("The local embedder failed: out of memory")

    broken = dataclasses.replace(sample_index, embedder=FailingEmbedder())
    result = retrieve(broken, KALMAN, RetrievalSettings(0.85, threshold=0.0))
    assert "out of memory" in result.notices[0].message
    assert all(h.dense == 0.0 for h in result.candidates)


def test_dense_search_error_midway_keeps_nothing_half_done(sample_index, monkeypatch) -> None:
    from rag.errors import BookIndexError

    def refuse(*args, **kwargs):
        raise BookIndexError("Qdrant at :memory: failed to fetch vectors: closed")

    monkeypatch.setattr(sample_index.store, "fetch_vectors", refuse)
    result = collect_candidates(sample_index, KALMAN)
    assert "failed to fetch vectors" in result.notices[0].message
    assert result.dense.max() == 0.0  # no mixture of real and missing cosines
