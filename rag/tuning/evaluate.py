"""One evaluation of a labelled question set, shared by `rag eval questions`, the tuning page and
bench/tuning.py: the candidate pass (only for questions without a pool yet), the weight ×
threshold sweep, the figures at the active settings, the recommended operating point, and the
answer pass (rag.tuning.answers) at the active settings and at the recommended point.

The page calls the same steps with its session caches: pools by question text and answer outcomes
by (question text, answer_key). A cache is read, never written: what was computed comes back on
the Evaluation for the caller to keep.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from rag.config import Settings
from rag.index.build import BookIndex
from rag.retrieval.hybrid import CandidatePool
from rag.tuning.answers import (
    AnswerOutcome,
    Progress,
    answer_pass,
    gate_for_accuracy,
    risk_coverage,
    summarise_answers,
)
from rag.tuning.questions import Question, unknown_entries
from rag.tuning.recommend import Recommendation, calibrate, recommend
from rag.tuning.sweep import SweepResult, build_arrays, candidate_pass, run_sweep
from rag.tuning.uncertainty import wilson_interval

if TYPE_CHECKING:
    from rag.answer.pipeline import Pipeline

CURRENT, RECOMMENDED = "current", "recommended"
# Settings that cannot change an answer: labels, where logs go, chat-session limits.
NOT_ANSWER_FIELDS = ("threshold_source", "settings_file", "audit_db", "embedder_defaults",
                     "rate_limit_per_minute", "history_messages")
AnswerCache = Mapping[tuple[str, str], AnswerOutcome]  # (question, answer_key) -> outcome
Point = tuple[float, float]  # (w_dense, threshold)


def answer_key(settings: Settings, point: Point) -> str:
    """Everything an answer depends on, as text: the settings moved to the point."""
    values = {f.name: getattr(settings, f.name) for f in dataclasses.fields(settings)
              if f.name not in NOT_ANSWER_FIELDS}
    values.update(w_dense=round(float(point[0]), 4), threshold=round(float(point[1]), 4))
    return repr(sorted(values.items()))


def evaluation_pipeline(index: BookIndex, settings: Settings) -> Pipeline:
    """The offline answerer with no audit log: evaluation answers are not chat questions."""
    from rag.answer.pipeline import Pipeline  # loads the answer stack only when answering

    return Pipeline(index, settings, llm=None, audit=None)


def book_sections(index: BookIndex) -> list[str]:
    return sorted({c.section_ref for c in index.chunks})


def sweep_questions(index: BookIndex, questions: Sequence[Question], top_k: int, pool_size: int,
                    pools: Mapping[str, CandidatePool] | None = None,
                    progress: Progress | None = None,
                    signal_weights: dict[str, float] | None = None
                    ) -> tuple[SweepResult, dict[str, CandidatePool]]:
    """The sweep, retrieving only questions `pools` lacks; returns it and every pool it used."""
    known = dict(pools or {})
    missing = list({q.question: q for q in questions if q.question not in known}.values())
    if missing:
        found = candidate_pass(index, missing, pool_size, progress)
        known.update(zip([q.question for q in missing], found, strict=True))
    arrays = build_arrays(questions, [known[q.question] for q in questions], top_k,
                          book_sections(index), signal_weights)
    return run_sweep(arrays), {q.question: known[q.question] for q in questions}


def answers_at(make_pipeline: Callable[[], Pipeline], questions: Sequence[Question],
               settings: Settings, point: Point, known: AnswerCache | None = None,
               progress: Progress | None = None) -> list[AnswerOutcome]:
    """Outcomes at the point in question order; the pipeline is made and run only for
    questions `known` lacks."""
    key, known = answer_key(settings, point), known or {}
    missing = list({q.question: q for q in questions if (q.question, key) not in known}.values())
    fresh: dict[str, AnswerOutcome] = {}
    if missing:
        outcomes = answer_pass(make_pipeline(), missing, settings, point[0], point[1], progress)
        fresh = {o.question: o for o in outcomes}
    return [fresh.get(q.question) or known[(q.question, key)] for q in questions]


@dataclass(frozen=True, eq=False)
class Evaluation:
    questions: tuple[Question, ...]
    settings: Settings
    pools: dict[str, CandidatePool]  # by question text, for the caller's cache
    result: SweepResult
    current: dict[str, float]  # retrieval figures at the active settings (exact, off-grid too)
    recommendation: Recommendation
    warnings: tuple[str, ...]  # expected entries that match no section of the book
    answers: dict[str, list[AnswerOutcome]]  # CURRENT / RECOMMENDED; empty when not asked for

    @property
    def points(self) -> dict[str, Point]:
        rec = self.recommendation
        return {CURRENT: (self.settings.w_dense, self.settings.threshold),
                RECOMMENDED: (rec.w_dense, rec.threshold)}

    @property
    def n_refused_by_capability(self) -> int:
        return int(self.result.arrays.refused.sum())

    def calibration(self) -> pd.DataFrame:
        """Retrieval-side reliability at the recommended point (rag.tuning.recommend)."""
        return calibrate(self.result, self.recommendation.w_dense, self.recommendation.threshold)

    def answer_cache(self) -> dict[tuple[str, str], AnswerOutcome]:
        """Every outcome under its cache key, for the caller to keep."""
        return {(o.question, answer_key(self.settings, self.points[name])): o
                for name, outcomes in self.answers.items() for o in outcomes}

    def answer_report(self, name: str, gate_target: float | None = None,
                      with_questions: bool = True) -> dict[str, Any]:
        return answer_report(self.answers[name], self.points[name], gate_target, with_questions)


def gate_choice(outcomes: Sequence[AnswerOutcome], target: float) -> dict[str, Any]:
    """The gate a target accuracy implies, with what it keeps (gate None when none reaches it)."""
    curve = risk_coverage(outcomes)
    gate = gate_for_accuracy(curve, target)
    row = next((r for r in curve if r["gate"] == gate), {})
    interval = wilson_interval(row.get("correct", 0), row.get("answered", 0))
    return {"target": target, "gate": gate, "answer_rate": row.get("answer_rate"),
            "accuracy": row.get("accuracy"), "answered": row.get("answered", 0),
            # on a few answers the accuracy the gate keeps is known only roughly
            "interval": None if interval is None else [round(v, 4) for v in interval]}


def answer_report(outcomes: Sequence[AnswerOutcome], point: Point,
                  gate_target: float | None = None, with_questions: bool = True
                  ) -> dict[str, Any]:
    """summarise_answers at the point, the gate a target implies, and per-question outcomes."""
    report: dict[str, Any] = {"w_dense": point[0], "threshold": point[1],
                              **summarise_answers(outcomes)}
    if gate_target is not None:
        report["gate"] = {k: round(v, 4) if isinstance(v, float) else v
                          for k, v in gate_choice(outcomes, gate_target).items()}
    if with_questions:
        report["questions"] = [o.to_dict(with_answer=False) for o in outcomes]
    return report


def evaluate_set(index: BookIndex, settings: Settings, questions: Sequence[Question], *,
                 objective: str = "max_f1", max_far: float | None = None,
                 pools: Mapping[str, CandidatePool] | None = None, answers: bool = True,
                 known_answers: AnswerCache | None = None, pipeline: Pipeline | None = None,
                 progress: Progress | None = None) -> Evaluation:
    """Sweep, recommend, and (with `answers`) answer every question at the active settings and
    at the recommended point. `pipeline` defaults to evaluation_pipeline(index, settings)."""
    result, used = sweep_questions(index, questions, settings.top_k, settings.candidate_pool,
                                   pools, progress, settings.retrieval.signal_weights)
    w, t = settings.w_dense, settings.threshold
    current = run_sweep(result.arrays, [w], [t]).at(w, t)  # exact even off the 0.05/0.01 grid
    rec = recommend(result, objective, max_far if objective == "max_recall_at_far" else None,
                    current=(w, t))
    outcomes: dict[str, list[AnswerOutcome]] = {}
    if answers:
        make = functools.cache(lambda: pipeline or evaluation_pipeline(index, settings))
        cache = dict(known_answers or {})
        for name, point in ((CURRENT, (w, t)), (RECOMMENDED, (rec.w_dense, rec.threshold))):
            outcomes[name] = answers_at(make, questions, settings, point, cache, progress)
            key = answer_key(settings, point)
            cache.update({(o.question, key): o for o in outcomes[name]})  # rec == current: reuse
    return Evaluation(tuple(questions), settings, used, result, current, rec,
                      tuple(unknown_entries(questions, book_sections(index))), outcomes)
