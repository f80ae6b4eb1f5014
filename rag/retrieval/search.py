"""Retrieval when the dense side (embedder or Qdrant) is down: BM25 alone, with a coverage rule."""

from __future__ import annotations

import dataclasses
from typing import Any

from rag.index.build import BookIndex
from rag.index.lexical import tokenize
from rag.retrieval.hybrid import (
    REASON_BELOW,
    REASON_BEYOND,
    CandidatePool,
    collect_candidates,
    rank_candidates,
)
from rag.retrieval.rerank import rerank
from rag.types import Retrieval, RetrievalSettings

# Without dense scores a normalised BM25 score is only relative (the best chunk always scores 1),
# so in BM25-only mode a chunk must also hold this share of the question's terms to count.
BM25_ONLY_COVERAGE = 0.5


def search_book(index: BookIndex, query: str, settings: RetrievalSettings) -> Retrieval:
    """Hybrid retrieval (BM25 alone when the dense side, embedder or Qdrant, failed), then the
    re-ranking stage when settings switch it on."""
    pool = collect_candidates(index, query, settings.candidate_pool)
    if pool.notices and not pool.dense.any():
        return rerank(rank_bm25_only(pool, settings), pool, index)
    return rerank(rank_candidates(pool, settings), pool, index)


def rank_bm25_only(pool: CandidatePool, settings: RetrievalSettings) -> Retrieval:
    """Rank by BM25 alone; a passing chunk must also hold BM25_ONLY_COVERAGE of the terms."""
    ranked = rank_candidates(pool, dataclasses.replace(settings, w_dense=0.0,
                                                       top_k=settings.candidate_pool))
    terms = set(tokenize(pool.query))
    candidates, hits = [], []
    for hit in ranked.candidates:
        if hit.selected:
            words = set(tokenize(" ".join((*hit.chunk.heading_path, hit.chunk.text))))
            covers = len(terms & words) >= BM25_ONLY_COVERAGE * len(terms)
            if covers and len(hits) < settings.top_k:
                hits.append(hit)
            else:
                hit = dataclasses.replace(hit, selected=False, passed=covers,
                                          reason=REASON_BEYOND if covers else REASON_BELOW)
        candidates.append(hit)
    return dataclasses.replace(ranked, settings=dataclasses.replace(settings, w_dense=0.0),
                               candidates=tuple(candidates), hits=tuple(hits))


def search_record(result: Retrieval, query_type: str, embedder: str) -> dict[str, Any]:
    """Every candidate with every score component, JSON-ready: what `rag search --json` prints
    and the API's POST /v1/search returns."""
    s = result.settings
    return {
        "query": result.query, "query_type": query_type,
        "settings": {"w_dense": s.w_dense, "w_bm25": s.w_bm25, "threshold": s.threshold,
                     "top_k": s.top_k, "candidate_pool": s.candidate_pool,
                     "w_terms": s.w_terms, "w_authority": s.w_authority,
                     "w_recency": s.w_recency, "rerank": s.rerank, "embedder": embedder},
        "candidates": [h.to_dict() for h in result.candidates],
        "hits": [h.to_dict() for h in result.hits],
        "notices": [n.to_dict() for n in result.notices],
    }
