"""One operating point per query type, adopted only when cross-validation on the labelled set
shows it beats a single point.

Each type's point is swept on the in-scope questions of the categories that name it, with the
out-of-scope questions the rules give that type added (all out-of-scope questions when fewer than
two are), so its threshold still refuses what it should. The
held-out check is what the app would do: each held-out question is typed by the rules
(`classify`), answered at its type's point when that type has one (at the single point when not),
and F1 is counted over all held-out answers. Folds are stratified by category and fixed by a
seed, so a run is reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from rag.answer.query_types import QUERY_TYPES, classify, type_of_category
from rag.retrieval.hybrid import CandidatePool
from rag.tuning.questions import Question
from rag.tuning.recommend import recommend
from rag.tuning.sweep import build_arrays, run_sweep

FOLDS = 5
MIN_TYPE_QUESTIONS = 8  # in-scope questions a type needs (in the training folds) for its own point
MIN_REFUSALS = 2  # out-of-scope questions of a type that train its point on their own
MIN_GAIN = 0.01  # held-out F1 per-type settings must add before apply writes them


@dataclass(frozen=True)
class TypeReport:
    folds: int
    single_f1: float  # held-out F1 with one point for every question
    per_type_f1: float  # held-out F1 with each type's point
    gain: float
    adopt: bool
    reason: str
    points: dict[str, dict[str, float]] = field(default_factory=dict)  # type -> point (all data)
    single: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # in-scope questions per type

    def to_dict(self) -> dict:
        return asdict(self)


def _type(q: Question) -> str | None:
    return type_of_category(q.category) if q.in_scope else None


def fit_points(questions: Sequence[Question], pools: Sequence[CandidatePool], top_k: int,
               objective: str = "max_f1", min_questions: int = MIN_TYPE_QUESTIONS
               ) -> tuple[tuple[float, float], dict[str, tuple[float, float]]]:
    """(single point, per-type points) from these questions; types with too few in-scope
    questions, or whose set cannot recommend, get none."""
    single = _point(questions, pools, top_k, objective)
    outside = [i for i, q in enumerate(questions) if not q.in_scope]
    points = {}
    for kind in QUERY_TYPES:
        mine = [i for i, q in enumerate(questions) if _type(q) == kind]
        if len(mine) < min_questions:
            continue
        # the out-of-scope questions the app would answer at this type's point: those the
        # rules give this type (all of them when fewer than MIN_REFUSALS do)
        typed = [i for i in outside if classify(questions[i].question) == kind]
        rows = mine + (typed if len(typed) >= MIN_REFUSALS else outside)
        point = _point([questions[i] for i in rows], [pools[i] for i in rows], top_k, objective)
        if point is not None:
            points[kind] = point
    return single, points


def _point(questions, pools, top_k, objective) -> tuple[float, float] | None:
    rec = recommend(run_sweep(build_arrays(questions, pools, top_k)), objective)
    return None if rec.refusal else (rec.w_dense, rec.threshold)


def outcomes(questions: Sequence[Question], pools: Sequence[CandidatePool], top_k: int,
             chosen: Sequence[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(answered, correct) per question, each at its own point."""
    answered, correct = np.zeros(len(questions), bool), np.zeros(len(questions), bool)
    for point in set(chosen):
        rows = [i for i, c in enumerate(chosen) if c == point]
        result = run_sweep(build_arrays([questions[i] for i in rows], [pools[i] for i in rows],
                                        top_k), [point[0]], [point[1]])
        table = result.question_table(*point)
        answered[rows], correct[rows] = table["answered"].to_numpy(), table["correct"].to_numpy()
    return answered, correct


def f1_of(questions: Sequence[Question], answered: np.ndarray, correct: np.ndarray) -> float:
    inside = np.array([q.in_scope for q in questions])
    tp = int((correct & inside).sum())
    precision = tp / max(int(answered.sum()), 1)
    recall = tp / max(int(inside.sum()), 1)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def folds_of(questions: Sequence[Question], folds: int, seed: int = 0) -> np.ndarray:
    """Fold number per question, stratified by category."""
    rng = np.random.default_rng(seed)
    out = np.zeros(len(questions), dtype=int)
    for category in sorted({q.category or "" for q in questions}):
        rows = [i for i, q in enumerate(questions) if (q.category or "") == category]
        rng.shuffle(rows)
        for n, i in enumerate(rows):
            out[i] = n % folds
    return out


def cross_validate(questions: Sequence[Question], pools: Sequence[CandidatePool], top_k: int,
                   objective: str = "max_f1", folds: int = FOLDS, seed: int = 0,
                   min_questions: int = MIN_TYPE_QUESTIONS) -> TypeReport:
    fold = folds_of(questions, folds, seed)
    single_choice: list[tuple[float, float] | None] = [None] * len(questions)
    typed_choice: list[tuple[float, float] | None] = [None] * len(questions)
    for f in range(folds):
        train = [i for i in range(len(questions)) if fold[i] != f]
        single, points = fit_points([questions[i] for i in train], [pools[i] for i in train],
                                    top_k, objective, min_questions)
        for i in np.flatnonzero(fold == f):
            single_choice[i] = single
            typed_choice[i] = points.get(classify(questions[i].question), single)
    if any(c is None for c in single_choice):
        return TypeReport(folds, 0.0, 0.0, 0.0, False, "The set cannot recommend a single "
                          "point on some folds (too few matching labels), so no per-type "
                          "comparison was made.")
    single_f1 = f1_of(questions, *outcomes(questions, pools, top_k, single_choice))
    typed_f1 = f1_of(questions, *outcomes(questions, pools, top_k, typed_choice))
    single, points = fit_points(questions, pools, top_k, objective, min_questions)
    gain = typed_f1 - single_f1
    adopt = bool(points) and gain >= MIN_GAIN
    counts = {k: sum(_type(q) == k for q in questions) for k in QUERY_TYPES}
    if not points:
        reason = (f"No query type has {min_questions}+ in-scope questions with a point of its "
                  "own, so one point serves every type.")
    elif adopt:
        reason = (f"Per-type points raise held-out F1 from {single_f1:.3f} to {typed_f1:.3f} "
                  f"({folds}-fold cross-validation), so they can be applied.")
    else:
        reason = (f"Per-type points give held-out F1 {typed_f1:.3f} against {single_f1:.3f} for "
                  f"one point ({folds}-fold cross-validation): less than {MIN_GAIN} better, so "
                  "one point is kept.")
    return TypeReport(folds, round(single_f1, 4), round(typed_f1, 4), round(gain, 4), adopt,
                      reason, {k: {"w_dense": w, "threshold": t} for k, (w, t) in points.items()},
                      {"w_dense": single[0], "threshold": single[1]} if single else {}, counts)
