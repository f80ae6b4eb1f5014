"""Weight × threshold sweeps: one candidate pass per question, then arithmetic on arrays.

Pools are padded into Q × C matrices. For each dense weight the blended scores of all questions
are computed at once and the best k sections per question picked (k argmax passes, each removing
the chosen section: what `rank_candidates` selects, ties included). A threshold then only decides
how many of those k scores pass, so each question's metrics are tables over that count (0..k),
and every threshold of the grid is summed in one pass (`passed_sum`): no re-ranking per setting.

Outcome definitions (documented choice): a question is *answered* when its best blended score
passes the threshold and the capability guardrail does not refuse it; an in-scope question is
*correct* when it is answered and a selected hit matches an expected section (the answer can
cite it). F1 treats "should answer" (in scope) as the positive class with TP = correct answers:
precision = correct / answered, recall = correct / in-scope; accuracy counts correct in-scope
answers and refused out-of-scope questions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rag.answer.guardrails import check_capability
from rag.answer.wording import as_read, asked
from rag.errors import ConfigError
from rag.index.build import BookIndex
from rag.retrieval.hybrid import CandidatePool, blend_scores, collect_candidates
from rag.retrieval.parts import PART_WEIGHT
from rag.tuning.metrics import count_relevant, ideal_dcg, match_mask, ndcg_by_rank
from rag.tuning.questions import Question

WEIGHTS = np.round(np.arange(21) * 0.05, 2)
THRESHOLDS = np.round(np.arange(101) * 0.01, 2)
METRICS = ("hit_at_k", "recall_at_k", "mrr", "ndcg_at_k", "answer_rate", "false_answer_rate",
           "accuracy", "precision", "f1")
Progress = Callable[[str, float], None]


@dataclass(frozen=True, eq=False)
class PoolArrays:
    """Every question's candidates as Q × C matrices (C = the largest pool, in pool order);
    a "slot" is one (question, section) pair."""

    questions: tuple[Question, ...]
    refused: np.ndarray  # Q bool: the capability guardrail refuses whatever the setting
    slot: np.ndarray  # Q × C each candidate's slot, -1 = padding
    dense: np.ndarray  # Q × C float32
    bm25: np.ndarray  # Q × C float32, normalised as in CandidatePool.bm25
    slot_mask: np.ndarray  # S int64: expected entries the slot's section matches
    slot_label: np.ndarray  # S `chapter_id#section_id`
    n_entries: np.ndarray  # Q expected entries per question
    idcg: np.ndarray  # Q ideal DCG@k per question (0 for out-of-scope)
    top_k: int
    # Q bool: an expected entry names a section of the book (of the pools, without book_sections)
    matched: np.ndarray | None = None
    signals: dict[str, np.ndarray] = field(default_factory=dict)  # name -> Q × C float32
    signal_weights: dict[str, float] = field(default_factory=dict)  # blended as in blend_scores
    part: np.ndarray | None = None  # Q × C float32: rag.retrieval.parts' score, as ranked

    @property
    def in_scope(self) -> np.ndarray:
        return np.array([q.in_scope for q in self.questions], dtype=bool)


@dataclass(frozen=True, eq=False)
class SweepResult:
    """Metric grids (W × T) and the top-k section scores behind them, ready to plot."""

    weights: np.ndarray
    thresholds: np.ndarray
    arrays: PoolArrays
    scores: np.ndarray  # W × Q × k best-first section scores (-inf = no section)
    slots: np.ndarray  # W × Q × k their slots in arrays (-1 = none)
    grids: dict[str, np.ndarray]  # metric -> W × T

    @property
    def n_in_scope(self) -> int:
        return int(self.arrays.in_scope.sum())

    @property
    def n_out_of_scope(self) -> int:
        return len(self.arrays.questions) - self.n_in_scope

    def locate(self, w_dense: float, threshold: float) -> tuple[int, int]:
        wi = np.abs(self.weights - w_dense).argmin()
        ti = np.abs(self.thresholds - threshold).argmin()
        if abs(self.weights[wi] - w_dense) > 1e-9 or abs(self.thresholds[ti] - threshold) > 1e-9:
            raise ConfigError(f"w_dense {w_dense} / threshold {threshold} is not on the sweep's "
                              "grid; run a sweep with those values.")
        return int(wi), int(ti)

    def at(self, w_dense: float, threshold: float) -> dict[str, float]:
        wi, ti = self.locate(w_dense, threshold)
        return {"w_dense": float(self.weights[wi]), "threshold": float(self.thresholds[ti]),
                **{k: round(float(v[wi, ti]), 4) for k, v in self.grids.items()}}

    def to_frame(self) -> pd.DataFrame:
        """Long form: one row per (w_dense, threshold, metric)."""
        w, t = np.meshgrid(self.weights, self.thresholds, indexing="ij")
        return pd.concat([pd.DataFrame({"w_dense": w.ravel(), "threshold": t.ravel(),
                                        "metric": name, "value": grid.ravel()})
                          for name, grid in self.grids.items()], ignore_index=True)

    def curves_at(self, w_dense: float) -> pd.DataFrame:
        """Every metric against the threshold at one weight."""
        wi, _ = self.locate(w_dense, float(self.thresholds[0]))
        return pd.DataFrame({"threshold": self.thresholds,
                             **{k: v[wi] for k, v in self.grids.items()}})

    def best_scores(self, w_dense: float) -> np.ndarray:
        wi, _ = self.locate(w_dense, float(self.thresholds[0]))
        return np.where(np.isfinite(self.scores[wi, :, 0]), self.scores[wi, :, 0], 0.0)

    def score_distribution(self, w_dense: float) -> pd.DataFrame:
        """Best blended score per question, for in- vs out-of-scope histograms."""
        qs = self.arrays.questions
        return pd.DataFrame({"question": [q.question for q in qs],
                             "category": [q.category for q in qs],
                             "in_scope": self.arrays.in_scope,
                             "best_blended": self.best_scores(w_dense).round(4)})

    def question_table(self, w_dense: float, threshold: float) -> pd.DataFrame:
        """Per question at one setting: expected, selected sections, top hit, outcome."""
        wi, _ = self.locate(w_dense, threshold)
        a = self.arrays
        scores, slots = self.scores[wi], self.slots[wi]
        passing = (scores >= np.float32(threshold)).sum(axis=1)
        hit = np.take_along_axis(metrics_by_count(a, slots)["hit_at_k"], passing[:, None], 1)
        answered = (passing > 0) & ~a.refused
        selected = [[str(a.slot_label[s]) for s in row[:m]] for row, m in zip(slots, passing,
                                                                               strict=True)]
        return pd.DataFrame({
            "question": [q.question for q in a.questions],
            "category": [q.category for q in a.questions], "in_scope": a.in_scope,
            "expected": [", ".join(q.expected_sections) for q in a.questions],
            "top_section": [str(a.slot_label[s]) if s >= 0 else "" for s in slots[:, 0]],
            "best_blended": self.best_scores(w_dense).round(4),
            "selected": [", ".join(s) for s in selected],
            "answered": answered,
            "refused_by": np.where(a.refused, "capability",
                                   np.where(passing == 0, "threshold", "")),
            "cites_expected": hit[:, 0] > 0,
            "correct": np.where(a.in_scope, answered & (hit[:, 0] > 0), ~answered)})


def candidate_pass(index: BookIndex, questions: Sequence[Question], pool_size: int,
                   progress: Progress | None = None) -> list[CandidatePool]:
    """The only step that embeds: one candidate pool per question."""
    pools = []
    for n, q in enumerate(questions):
        # searched as the pipeline searches it: without its words about the book
        pools.append(collect_candidates(index, as_read(q.question, index), pool_size))
        if progress is not None:
            progress(f"Retrieved {n + 1}/{len(questions)} questions", (n + 1) / len(questions))
    return pools


def build_arrays(questions: Sequence[Question], pools: Sequence[CandidatePool], top_k: int,
                 book_sections: Sequence[str] | None = None,
                 signal_weights: dict[str, float] | None = None) -> PoolArrays:
    """Pad pools into Q × C matrices; book_sections (every `chapter#section` of the book) sizes
    nDCG's ideal list; signal_weights (RetrievalSettings.signal_weights) blend the composite
    signals in at every grid point, as rank_candidates does."""
    width = max([len(p.chunks) for p in pools], default=0)
    shape = (len(questions), max(width, 1))
    dense, bm25 = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
    weights = {k: w for k, w in (signal_weights or {}).items() if w > 0}
    signals = {name: np.zeros(shape, np.float32) for name in weights}
    part = np.zeros(shape, np.float32)
    slot = np.full(shape, -1, dtype=np.int64)
    masks: list[int] = []
    labels: list[str] = []
    idcg = np.zeros(len(questions))
    matched = np.zeros(len(questions), dtype=bool)
    for qi, (q, pool) in enumerate(zip(questions, pools, strict=True)):
        local: dict[str, int] = {}
        for ci, c in enumerate(pool.chunks):
            if c.section_key not in local:
                local[c.section_key] = len(masks)
                masks.append(match_mask(q.expected_sections, c.section_ref))
                labels.append(c.section_ref)
            slot[qi, ci] = local[c.section_key]
        dense[qi, : len(pool.chunks)] = pool.dense
        bm25[qi, : len(pool.chunks)] = pool.bm25
        for name, values in signals.items():
            values[qi, : len(pool.chunks)] = pool.signal(name)
        part[qi, : len(pool.chunks)] = pool.signal("part")
        universe = book_sections if book_sections is not None else labels
        relevant = count_relevant(q.expected_sections, universe)
        matched[qi] = relevant > 0
        idcg[qi] = ideal_dcg(relevant or len(q.expected_sections), top_k)
    refused = [check_capability(q.question, "", "", asked=asked(q.question)) is not None
               for q in questions]  # as the pipeline checks it (no index here: no spelling)
    return PoolArrays(tuple(questions), np.array(refused, dtype=bool), slot, dense, bm25,
                      np.array(masks, dtype=np.int64), np.array(labels, dtype=object),
                      np.array([len(q.expected_sections) for q in questions]), idcg, top_k,
                      matched, signals, weights, part if part.any() else None)


def top_sections(arrays: PoolArrays, w_dense: float) -> tuple[np.ndarray, np.ndarray]:
    """Best-first section scores and slots (Q × k, padded with -inf / -1) at one weight: the
    hits rank_candidates would select at threshold 0."""
    blended = blend_scores(arrays.dense, arrays.bm25, float(w_dense), signals=arrays.signals,
                           signal_weights=arrays.signal_weights)  # float32, as rank_candidates
    if arrays.part is not None:  # a question names a numbered part
        blended = blended + np.float32(PART_WEIGHT) * arrays.part
    blended[arrays.slot < 0] = -np.inf
    rows = np.arange(len(arrays.questions))
    scores = np.full((len(rows), arrays.top_k), -np.inf, dtype=np.float32)
    slots = np.full((len(rows), arrays.top_k), -1, dtype=np.int64)
    for j in range(arrays.top_k):
        # argmax takes the first maximum: equal scores go by pool position, as in rank_candidates
        best = blended.argmax(axis=1)
        score, slot = blended[rows, best], arrays.slot[rows, best]
        found = np.isfinite(score)
        scores[found, j], slots[found, j] = score[found], slot[found]
        blended[arrays.slot == np.where(found, slot, -2)[:, None]] = -np.inf  # one per section
    return scores, slots


def metrics_by_count(arrays: PoolArrays, slots: np.ndarray) -> dict[str, np.ndarray]:
    """Per-question hit, recall, rr and ndcg when the first m sections are selected: (..., k+1)."""
    masks = np.where(slots >= 0, arrays.slot_mask[np.maximum(slots, 0)], 0)
    relevant = masks != 0
    matched = np.bitwise_count(np.bitwise_or.accumulate(masks, axis=-1))
    ranks = np.arange(1, arrays.top_k + 1)
    first = np.where(relevant.any(-1), relevant.argmax(-1) + 1, arrays.top_k + 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {"hit_at_k": np.logical_or.accumulate(relevant, axis=-1).astype(float),
               "recall_at_k": matched / np.maximum(arrays.n_entries, 1)[..., :, None],
               "mrr": np.where(ranks >= first[..., None], 1.0 / first[..., None], 0.0),
               "ndcg_at_k": ndcg_by_rank(relevant, arrays.idcg)}
    zero = np.zeros(slots.shape[:-1] + (1,))
    return {k: np.concatenate([zero, v], axis=-1) for k, v in out.items()}


def passed_sum(passes: np.ndarray, values: np.ndarray, n_thresholds: int) -> np.ndarray:
    """W × T sums of values[w, q, j] over the (q, j) whose score passes each threshold, where
    passes[w, q, j] = how many of the sorted thresholds the score reaches: adding each value at
    that bin and summing bins from the top gives every threshold at once."""
    n_w = passes.shape[0]
    bins = np.arange(n_w)[:, None, None] * (n_thresholds + 1) + passes
    counts = np.bincount(bins.ravel(), np.broadcast_to(values, passes.shape).ravel(),
                         minlength=n_w * (n_thresholds + 1)).reshape(n_w, n_thresholds + 1)
    return np.cumsum(counts[:, ::-1], axis=1)[:, ::-1][:, 1:]


def summarise(arrays: PoolArrays, scores: np.ndarray, by_count: dict[str, np.ndarray],
              thresholds: np.ndarray) -> dict[str, np.ndarray]:
    """Every metric in METRICS on the W × T grid. With m sections passing, a question's metric
    is the sum of its steps (value at j+1 minus value at j) over the j < m passing scores."""
    # float32 thresholds: rank_candidates compares float32 scores with a weakly typed float
    passes = np.searchsorted(thresholds.astype(np.float32), scores, side="right")
    n_t = len(thresholds)
    inside, allowed = arrays.in_scope[:, None], ~arrays.refused[:, None]
    n_in, n_out = max(int(inside.sum()), 1), max(int((~inside).sum()), 1)
    steps = {k: np.diff(v, axis=-1) for k, v in by_count.items()}
    out = {k: passed_sum(passes, v * inside, n_t) / n_in for k, v in steps.items()}
    first = np.zeros(scores.shape[1:])
    first[:, 0] = 1.0  # answered once the best section passes
    answered_in = passed_sum(passes, first * inside * allowed, n_t)
    answered_out = passed_sum(passes, first * ~inside * allowed, n_t)
    tp = passed_sum(passes, steps["hit_at_k"] * inside * allowed, n_t)
    out["answer_rate"], out["false_answer_rate"] = answered_in / n_in, answered_out / n_out
    out["accuracy"] = (tp + (~inside).sum() - answered_out) / len(arrays.questions)
    answered = answered_in + answered_out
    out["precision"] = np.where(answered > 0, tp / np.maximum(answered, 1), 0.0)
    total = out["precision"] + tp / n_in
    out["f1"] = np.where(total > 0, 2 * out["precision"] * (tp / n_in)
                         / np.where(total > 0, total, 1), 0.0)
    return out


def run_sweep(arrays: PoolArrays, weights: Sequence[float] = WEIGHTS,
              thresholds: Sequence[float] = THRESHOLDS) -> SweepResult:
    """Every metric on the weight × threshold grid, plus what per-question views need."""
    weights = np.asarray(weights, dtype=float)
    thresholds = np.sort(np.asarray(thresholds, dtype=float))
    tops = [top_sections(arrays, w) for w in weights]
    scores = np.stack([s for s, _ in tops])  # W × Q × k
    slots = np.stack([s for _, s in tops])
    grids = summarise(arrays, scores, metrics_by_count(arrays, slots), thresholds)
    return SweepResult(weights=weights, thresholds=thresholds, arrays=arrays, scores=scores,
                       slots=slots, grids={k: grids[k] for k in METRICS})
