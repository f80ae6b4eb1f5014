"""Composite signals beside dense and BM25, each in [0, 1] per candidate (the original design's
ADR: semantic similarity, source authority, recency, query-term match):

- terms: the IDF-weighted share of the question's distinct terms a chunk holds (heading path
  included), read from the lexical backend (bm25s's term-document matrix, or the candidates'
  sparse vectors in Qdrant);
- authority: the chapter's frontmatter `authority` (0..1); chunks without one score 0;
- recency: the chapter's frontmatter `last_updated`, scaled over the book (oldest 0, newest 1;
  all the same date: 1); chunks without one score 0.

How much each counts is RetrievalSettings.w_terms / w_authority / w_recency (0 by default).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np

from rag.types import Chunk

SIGNALS = ("terms", "authority", "recency")
SIGNAL_LABELS = {"terms": "Term match", "authority": "Authority", "recency": "Recency"}


def book_signals(index) -> tuple[np.ndarray, np.ndarray]:
    """(authority, recency) of every chunk of the book, computed once per loaded index (kept
    in BookIndex.derived, which every request's copy of the index shares)."""
    key = ("book_signals", id(index.chunks))
    if key not in index.derived:
        index.derived[key] = (np.array([authority_of(c) for c in index.chunks],
                                       dtype=np.float32), recency_scores(index.chunks))
    return index.derived[key]


def authority_of(chunk: Chunk) -> float:
    value = getattr(chunk, "authority", None)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(min(max(value, 0.0), 1.0)) if value == value else 0.0


def _day(chunk: Chunk) -> int | None:
    value = getattr(chunk, "last_updated", None)
    try:
        return date.fromisoformat(str(value)[:10]).toordinal() if value else None
    except ValueError:
        return None


def recency_scores(chunks: Sequence[Chunk]) -> np.ndarray:
    """Oldest dated chunk 0, newest 1 (all dated the same day: 1); undated chunks 0."""
    days = [_day(c) for c in chunks]
    known = [d for d in days if d is not None]
    if not known:
        return np.zeros(len(chunks), dtype=np.float32)
    oldest, span = min(known), max(known) - min(known)
    return np.array([0.0 if d is None else 1.0 if span == 0 else (d - oldest) / span
                     for d in days], dtype=np.float32)
