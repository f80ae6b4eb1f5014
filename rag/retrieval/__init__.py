"""Stage 2, retrieval: a question checked once (`query`), dense ∪ BM25 candidates blended and cut
(`hybrid`), the book search with its BM25-only fallback (`search`), and a pasted passage scored
like a chunk (`selection`)."""

from __future__ import annotations

from rag.retrieval.hybrid import (
    CandidatePool,
    blend_scores,
    collect_candidates,
    rank_candidates,
    retrieve,
)
from rag.retrieval.query import validate_query
from rag.retrieval.search import search_book
from rag.retrieval.selection import score_selection

__all__ = [
    "CandidatePool", "blend_scores", "collect_candidates", "rank_candidates", "retrieve",
    "score_selection", "search_book", "validate_query"
]
