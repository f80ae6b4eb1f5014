"""Ranking metrics, computed in one place for question sets, sweeps and the BEIR benchmark.

Question sets count sections (hits are one per section) with binary gains; BEIR counts documents
with graded gains. Both use the same discount (1 / log2(rank + 1)) and the same nDCG:

- Hit@k: some selected hit matches an expected entry.
- Recall@k: the share of expected entries (or relevant documents) among the first k.
- MRR: 1 / rank of the first matching hit (0 when none).
- nDCG@k: DCG of the first k over the ideal DCG; for question sets the ideal list holds every
  section of the book that matches an entry, so a bare chapter with 4 sections can fill 4 ranks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def discounts(n: int) -> np.ndarray:
    """1 / log2(rank + 1) for ranks 1..n."""
    return 1.0 / np.log2(np.arange(2, n + 2))


def ideal_dcg(gains: Sequence[float] | int, k: int) -> float:
    """DCG@k of the best possible list: `gains` of every relevant item (any order), or a count
    of relevant items with gain 1."""
    ideal = np.ones(gains) if isinstance(gains, int) else np.sort(np.asarray(gains, float))[::-1]
    ideal = ideal[:k]
    return float(np.dot(ideal, discounts(len(ideal))))


def ndcg_by_rank(gains: np.ndarray, idcg: np.ndarray | float) -> np.ndarray:
    """nDCG at every cut-off along the last axis (gains in rank order); 0 where idcg is 0."""
    gains = np.asarray(gains, dtype=float)
    dcg = np.cumsum(gains * discounts(gains.shape[-1]), axis=-1)
    idcg = np.asarray(idcg, dtype=float)[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(idcg > 0, dcg / np.where(idcg > 0, idcg, 1.0), 0.0)


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    """nDCG@k with graded gains (BEIR / trec_eval convention: gain = relevance)."""
    gains = np.array([relevant.get(doc, 0) for doc in ranked[:k]], dtype=float)
    if not len(gains):
        return 0.0
    return float(ndcg_by_rank(gains, ideal_dcg(list(relevant.values()), k))[-1])


def recall_at(ranked: Sequence[str], relevant: Iterable[str], k: int = 100) -> float:
    relevant = set(relevant)
    return len(set(ranked[:k]) & relevant) / len(relevant) if relevant else 0.0


def entry_matches(entry: str, chapter_id: str, section_id: str) -> bool:
    """`chapter#section` matches that section; a bare `chapter` matches all its sections."""
    chapter, sep, section = entry.partition("#")
    return chapter == chapter_id and (not sep or section == section_id)


def match_mask(expected: Iterable[str], section_ref: str) -> int:
    """Bit i is set when the section `chapter_id#section_id` matches expected entry i."""
    chapter, _, section = section_ref.partition("#")
    return sum(1 << i for i, e in enumerate(expected) if entry_matches(e, chapter, section))


def count_relevant(expected: Iterable[str], section_refs: Iterable[str]) -> int:
    """How many distinct sections of the book match some entry: the ideal list for nDCG."""
    expected = tuple(expected)
    return sum(1 for ref in set(section_refs) if match_mask(expected, ref))


def score_ranking(section_refs: list[str], expected: tuple[str, ...], k: int,
                  n_relevant: int | None = None) -> dict[str, float]:
    """Hit@k, Recall@k, reciprocal rank and nDCG@k of one selected list (best first)."""
    masks = [match_mask(expected, ref) for ref in section_refs[:k]]
    matched = 0
    for m in masks:
        matched |= m
    first = next((i for i, m in enumerate(masks) if m), None)
    idcg = ideal_dcg(len(expected) if n_relevant is None else n_relevant, k)
    gains = np.array([1.0 if m else 0.0 for m in masks])
    return {"hit": float(first is not None),
            "recall": bin(matched).count("1") / len(expected) if expected else 0.0,
            "rr": 0.0 if first is None else 1.0 / (first + 1),
            "ndcg": float(ndcg_by_rank(gains, idcg)[-1]) if len(gains) else 0.0}
