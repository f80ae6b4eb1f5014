"""What the tuning page shows, as plain frames and dicts: the objective over the grid, curves,
score distributions, figures side by side, the margin, the per-question outcomes, the settings
history, the logged rows a replay needs, and the answer checks (accuracy, reliability by level,
risk–coverage). The numbers come from rag.tuning.sweep, rag.tuning.recommend, rag.tuning.answers
and rag.tuning.replay; nothing here scores anything.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rag.audit.filters import AuditFilters
from rag.tuning.answers import (
    AnswerOutcome,
    confidence_figures,
    level_table,
    missing_fact_places,
    risk_coverage,
)
from rag.tuning.fact_places import describe_counts
from rag.tuning.recommend import OBJECTIVES, Recommendation, objective_grid
from rag.tuning.runs import answer_figures  # noqa: F401  (the page's modules import it from here)
from rag.tuning.sweep import PoolArrays, SweepResult, run_sweep
from rag.tuning.uncertainty import describe_calibration

OBJECTIVE_LABELS = {"max_f1": "Max F1",
                    "max_recall_at_far": "Max Recall@k under a false-answer limit"}
CURVES = {"answer_rate": "Answer rate (in scope)", "false_answer_rate": "False-answer rate",
          "recall_at_k": "Recall@k", "f1": "F1"}
FIGURES = {"f1": "F1", "recall_at_k": "Recall@k", "hit_at_k": "Hit@k", "mrr": "MRR",
           "ndcg_at_k": "nDCG@k", "answer_rate": "Answer rate (in scope)",
           "false_answer_rate": "False-answer rate (out of scope)", "accuracy": "Accuracy",
           "precision": "Precision"}
ANSWER_FIGURES = {"answer_accuracy": "Answer accuracy (key facts)",
                  "answer_with_more": "Answer or the passages under it hold the key facts",
                  "answer_false_rate": "False answers (answer pass)",
                  "ece": "Calibration error (ECE)", "auroc": "Confidence AUROC"}
NEIGHBOURS = {"w-0.05": "dense − 0.05", "w+0.05": "dense + 0.05", "t-0.05": "threshold − 0.05",
              "t+0.05": "threshold + 0.05"}
REPLAY_LIMIT = 500


def objective_args(objective: str, far_percent: float) -> tuple[str, float | None]:
    """The page's choice as recommend() arguments: a limit only for the constrained objective."""
    if objective not in OBJECTIVES:
        objective = OBJECTIVES[0]
    return objective, (round(far_percent / 100, 4) if objective == "max_recall_at_far" else None)


def objective_title(objective: str, max_far: float | None, top_k: int) -> str:
    if objective == "max_recall_at_far":
        return f"Recall@{top_k} where the false-answer rate ≤ {100 * (max_far or 0):g} %"
    return "F1 (answer vs refuse)"


def objective_matrix(result: SweepResult, objective: str, max_far: float | None) -> pd.DataFrame:
    """Weights (rows) × thresholds (columns); points that break the constraint are NaN."""
    values, feasible = objective_grid(result, objective, max_far)
    return pd.DataFrame(np.where(feasible, values, np.nan), index=result.weights,
                        columns=result.thresholds)


def curves_frame(result: SweepResult, w_dense: float) -> pd.DataFrame:
    """Long form for a line chart: threshold, metric (label), value at one weight."""
    wide = result.curves_at(w_dense)
    long = wide.melt(id_vars="threshold", value_vars=list(CURVES), var_name="key",
                     value_name="value")
    long["metric"] = long["key"].map(CURVES)
    return long[["threshold", "metric", "value"]]


def distribution_frame(result: SweepResult, w_dense: float) -> pd.DataFrame:
    frame = result.score_distribution(w_dense)
    frame["scope"] = np.where(frame["in_scope"], "in scope", "out of scope")
    return frame


def current_figures(arrays: PoolArrays, w_dense: float, threshold: float) -> dict[str, float]:
    """Figures at the active settings, exact even when they are off the sweep's grid."""
    return run_sweep(arrays, [w_dense], [threshold]).at(w_dense, threshold)


def figures_frame(columns: dict[str, dict[str, float]]) -> pd.DataFrame:
    """One row per metric, one column per named operating point, plus the change from the first
    column to the second."""
    names = list(columns)
    labels = {"w_dense": "Dense weight", "threshold": "Threshold", **FIGURES, **ANSWER_FIGURES}
    rows = [{"metric": label, **{n: columns[n].get(key) for n in names}}
            for key, label in labels.items() if any(key in columns[n] for n in names)]
    frame = pd.DataFrame(rows)
    if len(names) >= 2:
        frame["change"] = (frame[names[1]] - frame[names[0]]).round(4)
    return frame


def margin_frame(rec: Recommendation) -> pd.DataFrame:
    """The objective at the four ±0.05 neighbours and how much it drops there (None beyond
    the grid)."""
    rows = []
    for key, label in NEIGHBOURS.items():
        point = rec.margin.get(key) or {}
        where = (f"{label} ({point['w_dense']:.2f} · {point['threshold']:.2f})" if point
                 else f"{label} (off the grid)")
        rows.append({"neighbour": where, "value": point.get("value"), "drop": point.get("drop"),
                     "meets_limit": point.get("feasible")})
    return pd.DataFrame(rows, columns=["neighbour", "value", "drop", "meets_limit"])


def outcome_frame(result: SweepResult, w_dense: float, threshold: float) -> pd.DataFrame:
    """Per question at one grid point, worded for reading: answered or refused (and by what),
    correct or not."""
    table = result.question_table(w_dense, threshold)
    refused = table["refused_by"].map({"capability": "refused (capability guardrail)",
                                       "threshold": "refused (below threshold)"})
    table["outcome"] = np.where(table["answered"], "answered", refused)
    table["scope"] = np.where(table["in_scope"], "in scope", "out of scope")
    return table


def fact_place_summary(outcomes: Sequence[AnswerOutcome]) -> str:
    """Where the book holds the key facts that the in-scope answers which are not correct lack
    ("" when none lacks one): the answerer's misses, retrieval's, and facts no unit holds."""
    counts = missing_fact_places(outcomes)
    if not sum(counts.values()):
        return ""
    return f"Where the book holds the key facts wrong or refused answers lack: " \
        f"{describe_counts(counts)}."


def level_frame(outcomes: Sequence[AnswerOutcome]) -> pd.DataFrame:
    """Per confidence level: questions, answered, correct, accuracy and its 95 % interval
    ("53–98 %"; on a few answers a level's accuracy is known only roughly)."""
    frame = pd.DataFrame(level_table(outcomes),
                         columns=["level", "count", "answered", "correct", "accuracy", "interval"])
    frame["interval"] = [f"{p[0]:.0%}–{p[1]:.0%}" if isinstance(p, tuple) else "—"
                         for p in frame["interval"]]
    return frame


def uncertainty_note(outcomes: Sequence[AnswerOutcome]) -> str:
    """How far the ECE and AUROC of these answers can be trusted (rag.tuning.uncertainty)."""
    figures = confidence_figures(outcomes)
    said = describe_calibration(figures["ece"], figures["calibration"])
    if figures["auroc_interval"]:
        lo, hi = figures["auroc_interval"]
        said += f" AUROC {figures['auroc']:.3f}, 95 % interval {lo:.2f}–{hi:.2f}."
    return said.strip()


def risk_coverage_frame(outcomes: dict[str, Sequence[AnswerOutcome]]) -> pd.DataFrame:
    """Long form: one row per (point name, gate) with the answer rate and accuracy there."""
    rows = [{"point": name, **row} for name, found in outcomes.items()
            for row in risk_coverage(found)]
    return pd.DataFrame(rows, columns=["point", "gate", "answered", "answer_rate", "correct",
                                       "accuracy"])


def answer_columns(table: pd.DataFrame, outcomes: Sequence[AnswerOutcome] | None
                   ) -> pd.DataFrame:
    """The per-question table with each answer's outcome beside the retrieval one: correct
    (None when the question has no key facts or no answer was checked), the key facts missing
    and where the book holds them, the status and the confidence."""
    table = table.copy()
    if outcomes is None:
        table["answer_correct"] = table["with_more"] = None
        table["missing_facts"] = table["fact_places"] = ""
        table["answer_status"] = table["answer"] = ""
        table["confidence"] = None
        return table
    if [o.question for o in outcomes] != list(table["question"]):
        raise ValueError("answer outcomes and the question table list different questions")
    table["answer_correct"] = [o.correct if o.judged else None for o in outcomes]
    table["with_more"] = [o.correct_with_more if o.judged else None for o in outcomes]
    table["missing_facts"] = ["; ".join(o.missing_facts) if o.answered or o.held_by_gate else
                              ("" if not o.key_facts else "(not answered)") for o in outcomes]
    table["fact_places"] = ["; ".join(p.describe() for p in o.fact_places) for o in outcomes]
    table["answer_status"] = [o.status for o in outcomes]
    table["confidence"] = [o.confidence for o in outcomes]
    table["answer"] = [o.answer for o in outcomes]
    return table


def gate_provenance(question_set: str, point: tuple[float, float], choice: dict[str, Any],
                    book: str, today: dt.date | None = None) -> dict[str, Any]:
    """What settings_writer.write_gate records: the target, where its curve was measured, and
    what the gate keeps."""
    return {"question_set": question_set, "book": book,
            "date": (today or dt.date.today()).isoformat(), "gate_target": choice["target"],
            "gate_point": f"dense {point[0]:.2f} · threshold {point[1]:.2f}",
            **{f"gate_{k}": None if choice.get(k) is None else round(choice[k], 4)
               for k in ("answer_rate", "accuracy")}}


def history_frame(settings_data: dict[str, Any]) -> pd.DataFrame:
    """The `[[history]]` entries of a settings file, newest first."""
    columns = ["date", "embedder", "previous_w_dense", "previous_threshold", "w_dense",
               "threshold", "previous_gate_caveat", "gate_caveat", "gate_target",
               "question_set", "objective", "max_far", "f1", "previous_source"]
    rows = [{c: entry.get(c) for c in columns} for entry in settings_data.get("history", [])
            if isinstance(entry, dict)]
    return pd.DataFrame(rows[::-1], columns=columns)


def provenance(question_set: str, rec: Recommendation, point: tuple[float, float],
               figures: dict[str, float], book: str, today: dt.date | None = None
               ) -> dict[str, Any]:
    """What settings_file.write_settings records next to the applied values; a point moved away
    from the recommendation says so."""
    by_hand = abs(point[0] - rec.w_dense) > 1e-9 or abs(point[1] - rec.threshold) > 1e-9
    objective = f"{rec.objective}, point chosen by hand" if by_hand else rec.objective
    return {"question_set": question_set, "objective": objective, "max_far": rec.max_far,
            "book": book, "date": (today or dt.date.today()).isoformat(),
            "f1": figures.get("f1"), "recall_at_k": figures.get("recall_at_k"),
            "false_answer_rate": figures.get("false_answer_rate")}


def limit_note(rec: Recommendation, limit: float) -> str:
    """Where the false-answer limit Apply checks against comes from."""
    if rec.max_far is not None:
        return f"False-answer limit: {limit:.2f}, the objective's (the slider above)."
    return (f"False-answer limit: {limit:.2f}, the default target (the Max Recall objective "
            "sets its own with the slider above).")


def replay_filters(days: Sequence[dt.date]) -> AuditFilters:
    """Whole days in UTC, the end day included."""
    if not days:
        return AuditFilters()
    start = dt.datetime.combine(days[0], dt.time.min, dt.UTC)
    end = dt.datetime.combine(days[-1] + dt.timedelta(days=1), dt.time.min, dt.UTC)
    return AuditFilters(start=start, end=end)


def load_replay_rows(reader: Any, filters: AuditFilters, limit: int = REPLAY_LIMIT
                     ) -> list[dict[str, Any]]:
    """The newest `limit` logged questions in range, each with its candidate pool and settings
    (the list view leaves those large columns out, so each row is read in full)."""
    page = reader.query_logs(filters, limit=limit)
    rows = []
    for log_id in page["log_id"]:
        record = reader.get_log(str(log_id), include_archive=False)
        if record is not None:
            rows.append(record)
    return rows
