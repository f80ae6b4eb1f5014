"""Are the answers right, and does their confidence say when they are not?

An answer is *correct* when the pipeline answered (status success or partial) an in-scope question
and its text contains every key fact of the question (rag.tuning.key_facts). A wrong answer says
where the book holds each fact it lacks (rag.tuning.fact_places).

Questions are *judged* when their right outcome is known: out of scope (any answer is wrong) or in
scope with key facts. In-scope questions without key facts count for retrieval only.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.config import Settings
from rag.errors import InputError
from rag.tuning.fact_places import FactPlace, locate_missing, place_counts
from rag.tuning.key_facts import key_facts_found
from rag.tuning.questions import Question
from rag.tuning.uncertainty import (
    N_BINS,
    CalibrationCheck,
    auroc_interval,
    auroc_of,
    calibration_check,
    ece_of,
    wilson_interval,
)

if TYPE_CHECKING:
    from rag.answer.pipeline import Pipeline
    from rag.index.build import BookIndex
    from rag.types import Response

ANSWERED = ("success", "partial")
LEVELS = ("high", "medium", "low")
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class AnswerOutcome:
    """One question answered at one setting."""

    question: str
    in_scope: bool
    key_facts: tuple[str, ...]
    status: str  # the Response's: success | partial | refused | error
    confidence: float
    level: str
    facts_found: tuple[bool, ...] = ()
    reason_codes: tuple[str, ...] = ()
    answer: str = ""
    latency_ms: float = 0.0
    held_by_gate: bool = False  # refused by the confidence gate alone: a lower gate answers it
    fact_places: tuple[FactPlace, ...] = ()  # where the book holds each missing fact
    # each key fact found in the answer or in the passages shown under it as more from the book
    # (rag.answer.response.more_from_book): what a reader has on screen, not the answer alone
    found_with_more: tuple[bool, ...] = ()
    sections: tuple[str, ...] = ()  # the section refs retrieval selected for it, best first

    @property
    def answered(self) -> bool:
        return self.status in ANSWERED

    @property
    def judged(self) -> bool:
        return not self.in_scope or bool(self.key_facts)

    @property
    def right_if_answered(self) -> bool:
        """The answer text (or, when held by the gate, the draft) holds every key fact."""
        return self.in_scope and bool(self.key_facts) and all(self.facts_found)

    @property
    def correct(self) -> bool:
        return self.answered and self.right_if_answered

    @property
    def correct_with_more(self) -> bool:
        """Answered, and the answer with the passages shown under it holds every key fact."""
        return self.answered and self.in_scope and bool(self.key_facts) and \
            all(self.found_with_more or self.facts_found)

    @property
    def shown_when_refused(self) -> bool:
        """Refused, and the closest passages shown under the refusal hold every key fact: the
        book's answer is on screen, though not given as one."""
        return self.status == "refused" and self.in_scope and bool(self.key_facts) and \
            bool(self.found_with_more) and all(self.found_with_more)

    @property
    def missing_facts(self) -> tuple[str, ...]:
        return tuple(f for f, ok in zip(self.key_facts, self.facts_found, strict=False) if not ok)

    def to_dict(self, with_answer: bool = True) -> dict[str, Any]:
        out = {"question": self.question, "in_scope": self.in_scope, "status": self.status,
               "answered": self.answered, "correct": self.correct if self.judged else None,
               "missing_facts": list(self.missing_facts), "confidence": self.confidence,
               "level": self.level, "held_by_gate": self.held_by_gate,
               "reason_codes": list(self.reason_codes), "latency_ms": self.latency_ms,
               "missing_fact_places": [p.to_dict() for p in self.fact_places],
               "correct_with_more": self.correct_with_more if self.judged else None}
        return out | ({"answer": self.answer} if with_answer else {})


def outcome_of(question: Question, response: Response, latency_ms: float,
               index: BookIndex | None = None) -> AnswerOutcome:
    """A Response judged against the question's labels; with the book's `index`, where the book
    holds each key fact the answer lacks."""
    overrides = [v for v in response.verdicts if v.action == "override"]
    held = (response.status == "refused" and response.draft is not None and bool(overrides)
            and all(v.guardrail == "confidence" for v in overrides))
    text = response.answer if response.status in ANSWERED else (
        response.draft.text if held and response.draft is not None else "")
    hits = response.retrieval.hits if response.retrieval is not None else ()
    outcome = AnswerOutcome(question.question, question.in_scope, question.key_facts,
                            response.status, float(response.confidence.score),
                            str(response.confidence.level),
                            key_facts_found(text, question.key_facts),
                            tuple(response.reason_codes), response.answer, round(latency_ms, 2),
                            held, sections=tuple(h.chunk.section_ref for h in hits))
    # under an answer, the passages that scored next; under an offline refusal, the closest
    more = [m.get("text", "") for m in response.metadata.get("more_from_book") or []] \
        if isinstance(response.metadata, dict) else []
    if more:
        outcome = dataclasses.replace(outcome, found_with_more=key_facts_found(
            " ".join([text, *more]), question.key_facts))
    if index is None or not question.in_scope or not outcome.missing_facts:
        return outcome
    return dataclasses.replace(
        outcome, fact_places=locate_missing(outcome.missing_facts, response, index))


def answer_pass(pipeline: Pipeline, questions: Sequence[Question], settings: Settings,
                w_dense: float, threshold: float, progress: Progress | None = None
                ) -> list[AnswerOutcome]:
    """Every question through the pipeline at (w_dense, threshold); ~20-150 ms a question with
    the offline answerer on the sample book."""
    variant = dataclasses.replace(settings, w_dense=w_dense, threshold=threshold)
    out = []
    for n, q in enumerate(questions):
        started = time.perf_counter()
        response = pipeline.answer(q.question, settings=variant)
        out.append(outcome_of(q, response, (time.perf_counter() - started) * 1000,
                              pipeline.index))
        if progress is not None:
            progress(f"Answered {n + 1}/{len(questions)} at dense {w_dense:.2f} · threshold "
                     f"{threshold:.2f}", (n + 1) / len(questions))
    return out


# -- metrics --------------------------------------------------------------------------------------

def _ratio(part: float, whole: int) -> float | None:
    return part / whole if whole else None


def answer_accuracy(outcomes: Sequence[AnswerOutcome]) -> float | None:
    """Correct / in-scope questions with key facts; None when there are none."""
    graded = [o for o in outcomes if o.in_scope and o.key_facts]
    return _ratio(sum(o.correct for o in graded), len(graded))


def false_answer_rate(outcomes: Sequence[AnswerOutcome]) -> float | None:
    """Out-of-scope questions answered / out-of-scope questions."""
    outside = [o for o in outcomes if not o.in_scope]
    return _ratio(sum(o.answered for o in outside), len(outside))


def level_table(outcomes: Sequence[AnswerOutcome]) -> list[dict[str, Any]]:
    """Judged questions per confidence level: how many, answered, correct, correct / answered."""
    judged = [o for o in outcomes if o.judged]
    levels = [*LEVELS, *sorted({o.level for o in judged} - set(LEVELS))]
    rows = []
    for level in levels:
        mine = [o for o in judged if o.level == level]
        answered = sum(o.answered for o in mine)
        correct = sum(o.correct for o in mine)
        rows.append({"level": level, "count": len(mine), "answered": answered,
                     "correct": correct, "accuracy": _ratio(correct, answered),
                     "interval": wilson_interval(correct, answered)})
    return rows


def _answered_judged(outcomes: Sequence[AnswerOutcome]) -> list[AnswerOutcome]:
    return [o for o in outcomes if o.judged and o.answered]


def expected_calibration_error(outcomes: Sequence[AnswerOutcome], bins: int = N_BINS
                               ) -> float | None:
    """Σ over equal-width confidence bins of (share of answers) × |accuracy − mean confidence|,
    over answered judged questions (an answered out-of-scope question is wrong)."""
    answered = _answered_judged(outcomes)
    return ece_of([o.confidence for o in answered], [o.correct for o in answered], bins)


def calibration(outcomes: Sequence[AnswerOutcome]) -> CalibrationCheck | None:
    """The ECE against what an answerer right exactly as often as it says scores on the same
    answered judged questions (rag.tuning.uncertainty)."""
    answered = _answered_judged(outcomes)
    return calibration_check([o.confidence for o in answered], [o.correct for o in answered])


def _right_and_wrong(outcomes: Sequence[AnswerOutcome]) -> tuple[list[float], list[float]]:
    answered = _answered_judged(outcomes)
    return ([o.confidence for o in answered if o.correct],
            [o.confidence for o in answered if not o.correct])


def confidence_auroc(outcomes: Sequence[AnswerOutcome]) -> float | None:
    """P(a right answer's confidence > a wrong one's), ties counted half (Mann–Whitney U / n₊n₋);
    None when all answers are right or all wrong."""
    return auroc_of(*_right_and_wrong(outcomes))


def risk_coverage(outcomes: Sequence[AnswerOutcome]) -> list[dict[str, Any]]:
    """For each gate (every distinct confidence, ascending): how many judged questions would be
    answered (answered now, or held back only by the current gate) with confidence ≥ gate, their
    share of judged questions, and how many of those are right."""
    judged = [o for o in outcomes if o.judged]
    able = [o for o in judged if o.answered or o.held_by_gate]
    rows = []
    for gate in sorted({o.confidence for o in able}):
        kept = [o for o in able if o.confidence >= gate]
        right = sum(o.right_if_answered for o in kept)
        rows.append({"gate": gate, "answered": len(kept), "answer_rate": len(kept) / len(judged),
                     "correct": right, "accuracy": right / len(kept)})
    return rows


def gate_for_accuracy(curve: Sequence[dict[str, Any]], target: float) -> float | None:
    """The lowest gate (most answers) whose accuracy reaches target; None when none does."""
    if not 0 <= target <= 1:
        raise InputError(f"Target accuracy {target} must be between 0 and 1 (e.g. 0.9).")
    return next((row["gate"] for row in sorted(curve, key=lambda r: r["gate"])
                 if row["accuracy"] >= target - 1e-9), None)


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _round_pair(pair: tuple[float, float] | None) -> list[float] | None:
    return None if pair is None else [round(pair[0], 4), round(pair[1], 4)]


def missing_fact_places(outcomes: Sequence[AnswerOutcome]) -> dict[str, int]:
    """Where the book holds the key facts that in-scope answers which are not correct lack
    (rag.tuning.fact_places.place_counts)."""
    return place_counts(p for o in outcomes if o.in_scope and o.key_facts and not o.correct
                        for p in o.fact_places)


def confidence_figures(outcomes: Sequence[AnswerOutcome], uncertainty: bool = True
                       ) -> dict[str, Any]:
    """ECE and AUROC of the answered judged questions, JSON-ready, and (with `uncertainty`,
    which simulates and resamples) how far each can be trusted (rag.tuning.uncertainty)."""
    right, wrong = _right_and_wrong(outcomes)
    check = calibration(outcomes) if uncertainty else None
    return {"ece": _round(expected_calibration_error(outcomes)),
            "calibration": check.to_dict() if check else None,
            "auroc": _round(auroc_of(right, wrong)),
            "auroc_interval": _round_pair(auroc_interval(right, wrong)) if uncertainty else None}


def summarise_answers(outcomes: Sequence[AnswerOutcome], uncertainty: bool = True
                      ) -> dict[str, Any]:
    """Every answer metric of one pass, JSON-ready (rates rounded to 4 places); without
    `uncertainty`, the figures alone (confidence_figures)."""
    graded = [o for o in outcomes if o.in_scope and o.key_facts]
    outside = [o for o in outcomes if not o.in_scope]
    latencies = [o.latency_ms for o in outcomes]
    return {
        "n_questions": len(outcomes), "n_with_key_facts": len(graded),
        "n_without_key_facts": sum(o.in_scope and not o.key_facts for o in outcomes),
        "n_out_of_scope": len(outside), "correct": sum(o.correct for o in graded),
        "accuracy": _round(answer_accuracy(outcomes)),
        "correct_with_more": sum(o.correct_with_more for o in graded),
        "accuracy_with_more": _round(_ratio(sum(o.correct_with_more for o in graded),
                                            len(graded))),
        "refused_with_facts_shown": sum(o.shown_when_refused for o in graded),
        "answered_out_of_scope": sum(o.answered for o in outside),
        "missing_fact_places": missing_fact_places(outcomes),
        "false_answer_rate": _round(false_answer_rate(outcomes)),
        "per_level": [row | {"accuracy": _round(row["accuracy"]),
                             "interval": _round_pair(row["interval"])}
                      for row in level_table(outcomes)],
        **confidence_figures(outcomes, uncertainty),
        "mean_latency_ms": round(float(np.mean(latencies)), 1) if latencies else None,
        "risk_coverage": [{k: _round(v) if isinstance(v, float) else v for k, v in row.items()}
                          for row in risk_coverage(outcomes)],
    }
