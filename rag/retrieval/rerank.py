"""Re-ranking: a closer second look at the best passing candidates, between hybrid retrieval
and synthesis (the original design's multi-stage retrieval: semantic + keyword + re-rank).

The top `rerank_depth` candidates that passed the threshold get a re-rank score in [0, 1] and
are ordered by (1 - rerank_weight) x blended + rerank_weight x re-rank score; then the cut runs
again (one chunk per section, top_k). The threshold still applies to the blended score, so
re-ranking changes the order and which chunks make the top-k, never what is refused. Each hit
keeps its rank before, and `moved` says whether re-ranking brought it into the top-k or out.

Re-rankers: "cohere" (Cohere's rerank endpoint; a failure keeps the hybrid order with a
notice) and "offline" (what Folio already has: per chunk, its section's best unit by
half dense similarity to the question, half IDF-weighted share of the question's terms in the
unit and its heading path).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from rag.errors import ConfigError, RagError
from rag.index.lexical import tokenize
from rag.notices import RERANK_FAILED, make_notice
from rag.retrieval.hybrid import REASON_BEYOND, REASON_DUPLICATE, CandidatePool
from rag.types import RERANKERS, Hit, Retrieval

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Reranker(Protocol):
    name: str

    def score_hits(self, pool: CandidatePool, hits: Sequence[Hit]) -> list[float]: ...


class OfflineReranker:
    """Best unit of each candidate's section against the question (see the module docstring);
    sentence vectors come from the index (kept at ingest); without them, term share alone."""

    name = "offline"

    def __init__(self, index) -> None:
        self.index = index

    def score_hits(self, pool: CandidatePool, hits: Sequence[Hit]) -> list[float]:
        terms = set(tokenize(pool.query))
        table = getattr(self.index, "sentences", None)
        idf = self._idf(terms, table)
        total = sum(idf.values()) or 1.0
        query = None if pool.query_vector is None else \
            np.asarray(pool.query_vector, dtype=np.float32)
        by_section: dict[str, float] = {}
        scores = []
        for hit in hits:
            key = hit.chunk.section_key
            if key not in by_section:
                by_section[key] = self._section_score(hit, terms, idf, total, table, query)
            scores.append(by_section[key])
        return scores

    @staticmethod
    def _section_score(hit: Hit, terms: set[str], idf: dict[str, float], total: float,
                       table, query: np.ndarray | None) -> float:
        """The best unit of the chunk's section: half meaning, half term share."""
        head = set(tokenize(" ".join(hit.chunk.heading_path)))
        rows = table.rows_for(hit.chunk.section_key) if table is not None else []
        if rows and query is not None:
            sims = np.clip(table.vectors[rows].astype(np.float32) @ query, 0.0, 1.0)
            stems = [table.token_sets[r] for r in rows]
        else:
            units = [t for t in SENTENCE_END.split(hit.chunk.text) if t.strip()]
            sims = np.zeros(len(units), dtype=np.float32)
            stems = [frozenset(tokenize(u)) for u in units]
        best = 0.0
        for sim, words in zip(sims, stems, strict=True):
            share = sum(idf[t] for t in terms if t in words or t in head) / total
            best = max(best, 0.5 * float(sim) + 0.5 * share)
        return round(best, 6)

    @staticmethod
    def _idf(terms: set[str], table) -> dict[str, float]:
        if table is None:
            return {t: 1.0 for t in terms}
        df, n = table.document_frequency, len(table.texts)
        return {t: float(np.log((n + 1) / (df.get(t, 0) + 0.5))) for t in terms}


_COHERE: dict[str, Reranker] = {}


def reranker_for(name: str, index, model: str = "rerank-v3.5") -> Reranker | None:
    """The re-ranker a setting names (None for "off"); Cohere's client is made once per model."""
    if name == "offline":
        return OfflineReranker(index)
    if name == "cohere":
        if model not in _COHERE:
            from rag.providers.cohere_reranker import CohereReranker

            _COHERE[model] = CohereReranker(model=model)
        return _COHERE[model]
    if name == "off":
        return None
    raise ConfigError(f"Unknown re-ranker {name!r}; choose one of {', '.join(RERANKERS)}.")


def rerank(retrieval: Retrieval, pool: CandidatePool, index=None,
           reranker: Reranker | None = None) -> Retrieval:
    """The retrieval re-ordered by the re-ranker its settings name (or the one given);
    unchanged when off or nothing passed; the hybrid order with a notice when it fails."""
    settings = retrieval.settings
    depth = [h for h in retrieval.candidates[: max(settings.rerank_depth, 0)] if h.passed]
    if settings.rerank == "off" or not depth:
        return retrieval
    t0 = time.perf_counter()
    try:
        reranker = reranker or reranker_for(settings.rerank, index, settings.rerank_model)
        scores = reranker.score_hits(pool, depth)
    except RagError as e:
        latency = dict(retrieval.latency_ms, rerank_ms=(time.perf_counter() - t0) * 1000)
        return dataclasses.replace(retrieval, latency_ms=latency, notices=(
            *retrieval.notices, make_notice(RERANK_FAILED, error=e)))
    reordered = apply_rerank(retrieval, dict(zip((h.chunk.chunk_id for h in depth), scores,
                                                 strict=True)))
    latency = dict(retrieval.latency_ms, rerank_ms=(time.perf_counter() - t0) * 1000)
    return dataclasses.replace(reordered, latency_ms=latency)


def apply_rerank(retrieval: Retrieval, scores: dict[str, float]) -> Retrieval:
    """Order the scored candidates by the mix, the rest after them as they were; cut again."""
    settings = retrieval.settings
    w = min(max(settings.rerank_weight, 0.0), 1.0)
    scored = [h for h in retrieval.candidates if h.chunk.chunk_id in scores]
    rest = [h for h in retrieval.candidates if h.chunk.chunk_id not in scores]
    scored.sort(key=lambda h: (-((1 - w) * h.blended + w * scores[h.chunk.chunk_id]), h.rank))
    seen: set[str] = set()
    hits: list[Hit] = []
    candidates: list[Hit] = []
    for rank, hit in enumerate([*scored, *rest], start=1):
        reason = hit.reason
        if hit.passed:
            key = hit.chunk.section_key
            reason = REASON_DUPLICATE if key in seen else \
                REASON_BEYOND if len(hits) >= settings.top_k else ""
            seen.add(key)
        selected = hit.passed and not reason
        moved = "in" if selected and not hit.selected else \
            "out" if hit.selected and not selected else ""
        new = dataclasses.replace(hit, rank=rank, rank_before=hit.rank, selected=selected,
                                  reason=reason, moved=moved,
                                  rerank=scores.get(hit.chunk.chunk_id))
        if selected:
            hits.append(new)
        candidates.append(new)
    return dataclasses.replace(retrieval, candidates=tuple(candidates), hits=tuple(hits))
