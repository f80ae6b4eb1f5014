"""Pick an operating point on a sweep, say how robust it is, and how calibrated its confidence is.

Ties are common (a few dozen questions give coarse metrics), so among the points that reach the
best objective value the one deepest inside that plateau wins: the farthest, in weight/threshold
units, from any point that does worse. A small change of data then moves it least. Remaining ties
go to the point nearest the current settings.

No point is recommended (`refusal` says why) when the labels cannot tell settings apart: fewer
than half of the in-scope questions name a section this book has (a set written for another
book, or for anchors since renamed), or no setting reaches an F1 above 0. Every point then ties
at nothing, and the "deepest" of a 2,121-point plateau would be an arbitrary choice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from rag.answer.confidence import score_confidence
from rag.errors import ConfigError
from rag.tuning.sweep import SweepResult, metrics_by_count

OBJECTIVES = ("max_f1", "max_recall_at_far")
MARGIN_STEP = 0.05
TOLERANCE = 1e-9
LEVELS = ("high", "medium", "low")
MIN_MATCHED_SHARE = 0.5  # in-scope questions whose expected sections exist in this book
FAR_LIMIT = 0.05  # false-answer target (issue 11) when the objective sets no limit of its own
STARTER_HINT = "Generate a starter question set from this book (Starter question set) instead."
# what Apply compares: key, name, True when higher is better
APPLY_METRICS = (("f1", "F1", True), ("recall_at_k", "recall@k", True),
                 ("false_answer_rate", "false-answer rate", False),
                 ("answer_accuracy", "answer accuracy", True))
WORSE_BY = 5e-4  # figures are shown to 3 decimals; a smaller change is no change


@dataclass(frozen=True)
class Recommendation:
    objective: str
    max_far: float | None
    w_dense: float
    threshold: float
    value: float  # the objective at the point
    metrics: dict[str, float]
    margin: dict[str, Any]
    plateau_size: int  # grid points that tie with it
    feasible: bool  # False when no point meets the false-answer limit
    n_in_scope: int = 0
    n_matched: int = 0  # in-scope questions with an expected section this book has
    refusal: str = ""  # why no point is recommended; "" when one is

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def objective_grid(result: SweepResult, objective: str, max_far: float | None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The objective's value and whether its constraint holds, both W × T."""
    if objective == "max_f1":
        return result.grids["f1"], np.ones_like(result.grids["f1"], dtype=bool)
    if objective == "max_recall_at_far":
        if max_far is None or not 0 <= max_far <= 1:
            raise ConfigError("max_recall_at_far needs a false-answer limit between 0 and 1 "
                              "(e.g. --max-far 0.05).")
        return (result.grids["recall_at_k"],
                result.grids["false_answer_rate"] <= max_far + TOLERANCE)
    raise ConfigError(f"Unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}.")


def plateau_centre(plateau: np.ndarray, weights: np.ndarray, thresholds: np.ndarray,
                   current: tuple[float, float]) -> tuple[int, int]:
    """The plateau point farthest from any non-plateau point; then the nearest to current."""
    w, t = np.meshgrid(weights, thresholds, indexing="ij")
    inside = np.argwhere(plateau)
    edge = np.argwhere(~plateau & _touches(plateau))  # the grid's own edge is not a drop
    if len(edge):
        dw = w[tuple(inside.T)][:, None] - w[tuple(edge.T)][None, :]
        dt = t[tuple(inside.T)][:, None] - t[tuple(edge.T)][None, :]
        depth = np.hypot(dw, dt).min(axis=1)
    else:
        depth = np.zeros(len(inside))
    deepest = inside[depth >= depth.max() - TOLERANCE]
    to_current = np.hypot(w[tuple(deepest.T)] - current[0], t[tuple(deepest.T)] - current[1])
    wi, ti = deepest[int(np.argmin(to_current))]
    return int(wi), int(ti)


def _touches(mask: np.ndarray) -> np.ndarray:
    """Cells with a 4-neighbour inside mask."""
    padded = np.pad(mask, 1, constant_values=False)
    return padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]


def margin_around(result: SweepResult, values: np.ndarray, feasible: np.ndarray, wi: int,
                  ti: int, step: float = MARGIN_STEP) -> dict[str, Any]:
    """The objective's drop at w ± step and threshold ± step (None beyond the grid)."""
    out: dict[str, Any] = {}
    w, t = result.weights[wi], result.thresholds[ti]
    for name, nw, nt in ((f"w-{step:g}", w - step, t), (f"w+{step:g}", w + step, t),
                         (f"t-{step:g}", w, t - step), (f"t+{step:g}", w, t + step)):
        i = np.flatnonzero(np.isclose(result.weights, nw))
        j = np.flatnonzero(np.isclose(result.thresholds, nt))
        if not (len(i) and len(j)):
            out[name] = None
            continue
        out[name] = {"w_dense": round(float(nw), 4), "threshold": round(float(nt), 4),
                     "value": round(float(values[i[0], j[0]]), 4),
                     "drop": round(float(values[wi, ti] - values[i[0], j[0]]), 4),
                     "feasible": bool(feasible[i[0], j[0]])}
    drops = [v["drop"] for v in out.values() if v is not None]
    out["worst_drop"] = max(drops) if drops else 0.0
    out["all_feasible"] = all(v["feasible"] for v in out.values() if isinstance(v, dict))
    return out


def recommend(result: SweepResult, objective: str = "max_f1", max_far: float | None = None,
              current: tuple[float, float] = (0.85, 0.60)) -> Recommendation:
    values, feasible = objective_grid(result, objective, max_far)
    if not feasible.any():
        # Nothing meets the limit: the safest point, i.e. the lowest false-answer rate.
        far = result.grids["false_answer_rate"]
        values, feasible_any = np.where(far <= far.min() + TOLERANCE, values, -np.inf), False
    else:
        values, feasible_any = np.where(feasible, values, -np.inf), True
    best = values.max()
    plateau = values >= best - TOLERANCE
    wi, ti = plateau_centre(plateau, result.weights, result.thresholds, current)
    raw, constraint = objective_grid(result, objective, max_far)
    w, t = float(result.weights[wi]), float(result.thresholds[ti])
    n_in, n_matched = label_coverage(result)
    return Recommendation(objective, max_far if objective != "max_f1" else None, w, t,
                          round(float(best), 4), result.at(w, t),
                          margin_around(result, raw, constraint, wi, ti), int(plateau.sum()),
                          feasible_any, n_in, n_matched,
                          refusal_reason(n_in, n_matched, float(result.grids["f1"].max())))


def label_coverage(result: SweepResult) -> tuple[int, int]:
    """(in-scope questions, those with an expected entry that names a section of the book);
    (0, 0) for a result made of grids alone."""
    a = result.arrays
    if a is None:
        return 0, 0
    matched = a.matched if a.matched is not None else a.in_scope
    return int(a.in_scope.sum()), int((matched & a.in_scope).sum())


def refusal_reason(n_in_scope: int, n_matched: int, best_f1: float) -> str:
    """Why the labels cannot pick a setting, or "" when they can."""
    if n_in_scope and n_matched < MIN_MATCHED_SHARE * n_in_scope:
        return (f"Only {n_matched} of the {n_in_scope} in-scope questions name a section that "
                f"exists in this book (fewer than {MIN_MATCHED_SHARE:.0%}): the question set "
                "probably belongs to another book, so no point is recommended. "
                f"{STARTER_HINT}")
    if best_f1 <= TOLERANCE:  # also when no question is in scope: F1 is 0 everywhere
        return ("No setting answers a single in-scope question from an expected section "
                "(the best F1 is 0.000), so no point is recommended. Check that the set has "
                "in-scope questions and that their expected sections are this book's section "
                f"IDs. {STARTER_HINT}")
    return ""


def _figures(a: float, b: float) -> tuple[str, str]:
    """Two decimals, or three when two would show equal numbers."""
    digits = 2 if f"{a:.2f}" != f"{b:.2f}" else 3
    return f"{a:.{digits}f}", f"{b:.{digits}f}"


def apply_risks(chosen: Mapping[str, float | None], recommended: Mapping[str, float | None],
                far_limit: float = FAR_LIMIT) -> list[str]:
    """What gets worse by applying `chosen` instead of the recommended point, and a false-answer
    rate above the limit: one phrase each (empty: safe to apply without asking)."""
    risks = []
    for key, name, higher in APPLY_METRICS:
        mine, theirs = chosen.get(key), recommended.get(key)
        if mine is None or theirs is None:
            continue  # answer accuracy only when both points were checked
        if (theirs - mine if higher else mine - theirs) > WORSE_BY:
            now, then = _figures(float(mine), float(theirs))
            risks.append(f"{name} {now} vs {then} at the recommended point")
    far = chosen.get("false_answer_rate")
    if far is not None and far > far_limit + TOLERANCE:
        now, limit = _figures(float(far), far_limit)
        risks.append(f"false-answer rate {now} is above the limit of {limit}")
    return risks


def calibrate(result: SweepResult, w_dense: float, threshold: float) -> pd.DataFrame:
    """Reliability table: answered in-scope questions by confidence level (retrieval = best
    blended score, no stated generation confidence) and how often their hits cite an expected
    section; out-of-scope answers at each level are counted alongside."""
    wi, _ = result.locate(w_dense, threshold)
    a = result.arrays
    scores, slots = result.scores[wi], result.slots[wi]
    passing = (scores >= np.float32(threshold)).sum(axis=1)
    cites = np.take_along_axis(metrics_by_count(a, slots)["hit_at_k"], passing[:, None], 1)[:, 0]
    answered = (passing > 0) & ~a.refused
    levels = np.array([score_confidence(float(s), None).level for s in result.best_scores(w_dense)])
    rows = []
    for level in LEVELS:
        mine = answered & (levels == level)
        n = int((mine & a.in_scope).sum())
        good = int((mine & a.in_scope & (cites > 0)).sum())
        rows.append({"level": level, "answered": n, "cites_expected": good,
                     "rate": round(good / n, 4) if n else None,
                     "false_answers": int((mine & ~a.in_scope).sum())})
    return pd.DataFrame(rows)
