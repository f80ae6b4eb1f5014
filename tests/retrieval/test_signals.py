"""Composite signals: term match against rank-bm25's own tokens (the oracle), authority and
recency from frontmatter values, and the blend including them exactly as displayed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rag.errors import ConfigError
from rag.index.lexical import LexicalIndex, tokenize
from rag.retrieval.hybrid import (
    CandidatePool,
    blend_scores,
    pool_from_record,
    pool_to_record,
    rank_candidates,
)
from rag.retrieval.signals import authority_of, recency_scores
from rag.types import Chunk, RetrievalSettings

TEXTS = ["The Kalman filter blends a prediction with a measurement.",
         "A PID controller has proportional, integral and derivative terms.",
         "The filter gain decides how much the measurement counts.",
         "Bread needs flour, water and salt."]


def expected_coverage(query: str, texts: list[str]) -> np.ndarray:
    """By hand: IDF-weighted share of the question's distinct stems each text holds."""
    docs = [set(tokenize(t)) for t in texts]
    terms = set(tokenize(query))
    idf = {t: np.log((len(texts) + 1) / (sum(t in d for d in docs) + 0.5)) for t in terms}
    total = sum(idf.values())
    return np.array([sum(idf[t] for t in terms if t in d) / total for d in docs])


@pytest.mark.parametrize("query", [
    "How does the Kalman filter weigh a measurement?",
    "What are the integral and derivative terms of a PID controller?",
    "filter gain",
    "quantum chromodynamics of bread",  # one unknown term lowers every chunk's share
])
def test_term_coverage_matches_a_count_by_hand(query: str) -> None:
    got = LexicalIndex.build(TEXTS).term_coverage(query)
    assert got == pytest.approx(expected_coverage(query, TEXTS), abs=1e-6)
    assert ((0 <= got) & (got <= 1)).all()


def test_term_coverage_of_a_question_without_terms_is_zero() -> None:
    assert LexicalIndex.build(TEXTS).term_coverage("what is the?").tolist() == [0.0] * 4
    assert LexicalIndex.build(["", ""]).term_coverage("kalman").tolist() == [0.0, 0.0]


def test_term_coverage_survives_save_and_load(tmp_path) -> None:
    index = LexicalIndex.build(TEXTS)
    index.save(tmp_path / "bm25")
    loaded = LexicalIndex.load(tmp_path / "bm25", len(TEXTS))
    assert loaded.term_coverage("kalman filter gain").tolist() == \
        index.term_coverage("kalman filter gain").tolist()


def chunk(name: str, **extra) -> Chunk:
    c = Chunk(chunk_id=name, text=f"text of {name}", module_id="m", chapter_id="c",
              section_id=name, section_title=name, chapter_title="C", heading_path=("C", name),
              stable=True, page=None, ordinal=0, token_count=3)
    for key, value in extra.items():
        object.__setattr__(c, key, value)  # frontmatter fields a book may give its chunks
    return c


def test_authority_is_clipped_and_junk_counts_as_none() -> None:
    assert [authority_of(chunk("a", authority=v)) for v in (0.8, 1.7, -1, "high", True,
                                                             float("nan"))] == \
        [0.8, 1.0, 0.0, 0.0, 0.0, 0.0]
    assert authority_of(chunk("b")) == 0.0


def test_recency_runs_from_oldest_to_newest() -> None:
    chunks = [chunk("a", last_updated="2024-01-01"), chunk("b", last_updated="2026-01-01"),
              chunk("c", last_updated="2025-01-01"), chunk("d"),
              chunk("e", last_updated="not a date")]
    got = recency_scores(chunks)
    assert got[:2].tolist() == [0.0, 1.0] and 0.49 < got[2] < 0.51
    assert got[3:].tolist() == [0.0, 0.0]
    assert recency_scores([chunk("x", last_updated="2025-05-05")]).tolist() == [1.0]
    assert recency_scores([chunk("y")]).tolist() == [0.0]


def pool_with_terms() -> CandidatePool:
    chunks = tuple(chunk(n) for n in ("c0", "c1", "c2"))
    return CandidatePool(query="q", chunks=chunks, dense=np.array([0.8, 0.7, 0.3], np.float32),
                         bm25_raw=np.array([1.0, 2.0, 0.0], np.float32), bm25_max=2.0,
                         signals={"terms": np.array([0.2, 1.0, 0.5], np.float32)})


def test_the_blend_includes_signals_exactly_as_displayed() -> None:
    p = pool_with_terms()
    s = RetrievalSettings(0.9, threshold=0.0, w_terms=0.2)
    result = rank_candidates(p, s)
    for h in result.candidates:
        shown = (1 - 0.2) * (0.9 * h.dense + 0.1 * h.bm25) + 0.2 * h.terms
        assert h.blended == pytest.approx(shown, abs=1e-6)
    # hybrid alone: c0 = 0.72 + 0.05 = 0.77 > c1 = 0.63 + 0.1 = 0.73; term match turns it round
    assert [h.chunk.chunk_id for h in rank_candidates(p, dataclasses.replace(s, w_terms=0))
            .candidates][:2] == ["c0", "c1"]
    assert [h.chunk.chunk_id for h in result.candidates][:2] == ["c1", "c0"]


def test_signal_weights_are_checked() -> None:
    with pytest.raises(ConfigError, match="at most 0.9"):
        blend_scores(np.ones(2), np.ones(2), 0.5, signals={}, signal_weights={"terms": 0.95})


def test_pool_records_keep_the_signals_for_replay() -> None:
    p = pool_with_terms()
    s = RetrievalSettings(0.9, threshold=0.0, w_terms=0.3)
    original = rank_candidates(p, s)
    record = pool_to_record(original)
    assert [c.get("terms") for c in record["candidates"]] == [1.0, 0.2, 0.5]
    replayed = rank_candidates(pool_from_record(record), s)
    assert [(h.chunk.chunk_id, h.blended) for h in replayed.candidates] == \
        [(h.chunk.chunk_id, h.blended) for h in original.candidates]


def test_collected_pools_carry_term_match_from_the_book(sample_index) -> None:
    from rag.retrieval.hybrid import collect_candidates

    pool = collect_candidates(sample_index, "How does a Kalman filter weigh a measurement?", 20)
    terms = pool.signal("terms")
    assert terms.shape == (len(pool.chunks),) and terms.max() > 0.5
    assert "signals_ms" in pool.latency_ms
    assert pool.query_vector is not None
