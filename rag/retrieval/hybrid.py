"""Hybrid retrieval: dense ∪ BM25 candidates, each carrying both components, blended and cut.

Collecting the candidate pool is the only step that embeds or searches; ranking it under any
weights and threshold is arithmetic, so the inspector, tuning sweeps and replay re-use a pool.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from rag.errors import ConfigError, RagError
from rag.index.build import BookIndex, dense_scores_for
from rag.notices import DENSE_UNAVAILABLE, Notice, make_notice
from rag.retrieval.parts import PART_WEIGHT, mentioned_in, pool_part_scores
from rag.retrieval.query import validate_query
from rag.retrieval.signals import SIGNALS, book_signals
from rag.types import MAX_SIGNALS, Chunk, Hit, Retrieval, RetrievalSettings

REASON_BELOW = "below_threshold"
REASON_DUPLICATE = "duplicate_section"
REASON_BEYOND = "beyond_top_k"
# what a pool keeps per candidate beside dense and BM25: the weighted composite signals, and the
# numbered part's score (rag.retrieval.parts), which moves the blend unweighted
POOL_SIGNALS = (*SIGNALS, "part")


@dataclass(frozen=True)
class CandidatePool:
    query: str
    chunks: tuple[Chunk, ...]
    dense: np.ndarray  # cosine clipped to [0, 1]
    bm25_raw: np.ndarray
    bm25_max: float  # the best raw BM25 score in the whole book for this query
    notices: tuple[Notice, ...] = ()
    latency_ms: dict[str, float] = field(default_factory=dict)
    signals: dict[str, np.ndarray] = field(default_factory=dict)  # name -> per candidate, [0, 1]
    query_vector: np.ndarray | None = None  # kept for the re-ranking stage; None: dense failed

    @property
    def bm25(self) -> np.ndarray:
        return self.bm25_raw / self.bm25_max if self.bm25_max > 0 else np.zeros_like(self.bm25_raw)

    def signal(self, name: str) -> np.ndarray:
        """A composite signal per candidate; zeros when the pool does not have it."""
        values = self.signals.get(name)
        return values if values is not None else np.zeros(len(self.chunks), dtype=np.float32)


def check_weights(w_dense: float, w_bm25: float | None = None) -> tuple[float, float]:
    w_bm25 = round(1.0 - w_dense, 10) if w_bm25 is None else w_bm25
    if not (0 <= w_dense <= 1 and 0 <= w_bm25 <= 1) or not math.isclose(w_dense + w_bm25, 1.0,
                                                                         abs_tol=1e-6):
        raise ConfigError(f"Blend weights must be between 0 and 1 and sum to 1; got dense "
                          f"{w_dense} + BM25 {w_bm25} = {w_dense + w_bm25:g}.")
    return w_dense, w_bm25


def blend_scores(dense: np.ndarray, bm25: np.ndarray, w_dense: float,
                 w_bm25: float | None = None, signals: dict[str, np.ndarray] | None = None,
                 signal_weights: dict[str, float] | None = None) -> np.ndarray:
    """hybrid = w_dense x dense + w_bm25 x bm25; with composite signals weighted in,
    (1 - their weights' sum) x hybrid + sum of weight x signal."""
    w_dense, w_bm25 = check_weights(w_dense, w_bm25)
    hybrid = w_dense * np.asarray(dense) + w_bm25 * np.asarray(bm25)
    weights = {k: w for k, w in (signal_weights or {}).items() if w > 0}
    if not weights:
        return hybrid
    check_signal_weights(weights)
    blended = np.float32(1.0 - sum(weights.values())) * hybrid
    for name, w in weights.items():
        values = (signals or {}).get(name)
        if values is not None:
            blended = blended + np.float32(w) * np.asarray(values, dtype=np.float32)
    return blended


def check_signal_weights(weights: dict[str, float]) -> None:
    if any(not 0 <= w <= 1 for w in weights.values()) or sum(weights.values()) > MAX_SIGNALS:
        raise ConfigError(f"Composite signal weights must each be between 0 and 1 and sum to at "
                          f"most {MAX_SIGNALS}; got {weights}.")


def collect_candidates(index: BookIndex, query: str, pool_size: int = 50) -> CandidatePool:
    """top-N dense ∪ top-N BM25 (∪ the chunks whose text names a numbered part the question
    names: rag.retrieval.parts); a failing dense side degrades to BM25 only, with a notice.
    BM25 comes from bm25s over the whole book or from Qdrant's sparse vectors (index/sparse.py),
    which score the dense side's extra candidates on request: the pool is the same either way."""
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    lexical = index.lexical.match(query, pool_size)
    timings["bm25_ms"] = (time.perf_counter() - t0) * 1000
    bm25_order = lexical.order
    named = mentioned_in(index, query)  # "week 5": chunks whose text names it (retrieval.parts)
    dense_by_id: dict[str, float] = {}
    notices: list[Notice] = []
    vector = None
    try:
        t0 = time.perf_counter()
        vector = index.embedder.embed_query(query)
        timings["embed_ms"] = (time.perf_counter() - t0) * 1000
        notices.extend(getattr(index.embedder, "notices", ()))  # e.g. ONNX fell back to PyTorch
        t0 = time.perf_counter()
        dense_by_id = dict(index.store.search(index.collection, vector, pool_size))
        timings["dense_ms"] = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        missing = [index.chunks[i].chunk_id for i in (*bm25_order, *named)
                   if index.chunks[i].chunk_id not in dense_by_id]
        dense_by_id.update(dense_scores_for(index, vector, missing))
        timings["fetch_ms"] = (time.perf_counter() - t0) * 1000
    except RagError as e:
        notices.append(make_notice(DENSE_UNAVAILABLE, error=e))
        dense_by_id, vector = {}, None
    positions = list(dict.fromkeys(
        [index.positions[cid] for cid in dense_by_id if cid in index.positions] + bm25_order
        + named))
    chunks = tuple(index.chunks[i] for i in positions)
    dense = np.clip(np.array([dense_by_id.get(c.chunk_id, 0.0) for c in chunks],
                             dtype=np.float32), 0.0, 1.0)
    t0 = time.perf_counter()
    bm25_raw = lexical.raw(positions)
    timings["bm25_ms"] += (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    rows = np.asarray(positions, dtype=np.int64)
    authority, recency = book_signals(index)
    signals = {"terms": lexical.coverage(positions), "authority": authority[rows],
               "recency": recency[rows], "part": pool_part_scores(index, query, positions)}
    timings["signals_ms"] = (time.perf_counter() - t0) * 1000
    return CandidatePool(query=query, chunks=chunks, dense=dense, bm25_raw=bm25_raw,
                         bm25_max=lexical.best,
                         notices=tuple(notices), latency_ms=timings, signals=signals,
                         query_vector=vector)


def rank_candidates(pool: CandidatePool, settings: RetrievalSettings) -> Retrieval:
    """Blend, sort, cut at the threshold, keep one chunk per section, keep the best top_k.
    A question that names a numbered part moves each candidate by PART_WEIGHT x its part score
    (rag.retrieval.parts): up in the part named, down in another of its kind."""
    t0 = time.perf_counter()
    bm25 = pool.bm25
    part = pool.signal("part")
    blended = blend_scores(pool.dense, bm25, settings.w_dense, signals=pool.signals,
                           signal_weights=settings.signal_weights)
    if part.any():
        blended = blended + np.float32(PART_WEIGHT) * part
    extra = {name: pool.signal(name) for name in POOL_SIGNALS}
    order = np.lexsort((np.arange(len(blended)), -blended))
    seen_sections: set[str] = set()
    hits: list[Hit] = []
    candidates: list[Hit] = []
    for rank, i in enumerate(order, start=1):
        chunk = pool.chunks[i]
        passed = bool(blended[i] >= settings.threshold)
        if not passed:
            reason = REASON_BELOW
        elif chunk.section_key in seen_sections:
            reason = REASON_DUPLICATE
        elif len(hits) >= settings.top_k:
            reason = REASON_BEYOND
        else:
            reason = ""
        hit = Hit(chunk=chunk, dense=round(float(pool.dense[i]), 6),
                  bm25_raw=round(float(pool.bm25_raw[i]), 6), bm25=round(float(bm25[i]), 6),
                  blended=round(float(blended[i]), 6), rank=rank, passed=passed,
                  selected=not reason, reason=reason,
                  **{name: round(float(values[i]), 6) for name, values in extra.items()})
        if passed:
            seen_sections.add(chunk.section_key)
        if hit.selected:
            hits.append(hit)
        candidates.append(hit)
    latency = dict(pool.latency_ms, rank_ms=(time.perf_counter() - t0) * 1000)
    return Retrieval(query=pool.query, settings=settings, candidates=tuple(candidates),
                     hits=tuple(hits), notices=pool.notices, latency_ms=latency,
                     bm25_max=pool.bm25_max)


def retrieve(index: BookIndex, query: str | bytes, settings: RetrievalSettings) -> Retrieval:
    """A raw query validated, then hybrid retrieval (the CLI's `search`, the benches)."""
    query = validate_query(query)
    return rank_candidates(collect_candidates(index, query, settings.candidate_pool), settings)


POOL_FIELDS = ("chunk_id", "module_id", "chapter_id", "section_id", "section_title", "stable",
               "page", "source")


def pool_to_record(retrieval: Retrieval) -> dict:
    """JSON-ready candidate pool: enough to re-rank under any setting later, without texts."""
    return {
        "query": retrieval.query, "bm25_max": retrieval.bm25_max,
        "candidates": [{**{f: getattr(h.chunk, f) for f in POOL_FIELDS},
                        "dense": h.dense, "bm25_raw": h.bm25_raw, "bm25": h.bm25,
                        **{name: getattr(h, name) for name in POOL_SIGNALS if getattr(h, name)}}
                       for h in retrieval.candidates],
    }


def pool_from_record(record: dict) -> CandidatePool:
    """Inverse of pool_to_record; chunk texts come back empty."""
    chunks = tuple(
        Chunk(text="", section_title=c.get("section_title", ""), chapter_title="",
              heading_path=(), ordinal=0, token_count=0,
              **{f: c.get(f) for f in POOL_FIELDS if f != "section_title"})
        for c in record.get("candidates", []))
    return CandidatePool(
        query=record.get("query", ""), chunks=chunks,
        dense=np.array([c["dense"] for c in record.get("candidates", [])], dtype=np.float32),
        bm25_raw=np.array([c["bm25_raw"] for c in record.get("candidates", [])],
                          dtype=np.float32),
        bm25_max=float(record.get("bm25_max", 0.0)),
        signals={name: np.array([c.get(name, 0.0) for c in record.get("candidates", [])],
                                dtype=np.float32) for name in POOL_SIGNALS})
