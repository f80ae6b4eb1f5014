"""Are the answers right, and does their confidence say when they are not?

An answer is *correct* when the pipeline answered (status success or partial) an in-scope question
and its text contains every key fact of the question. Key facts are matched on normalised text:
case-folded, markdown marks and citation markers dropped, hyphens and dashes read as spaces,
whitespace collapsed, a number and its unit with or without a space ("64 GB" is "64GB"), and
whole words only ("ODE" is not in "node", "5 cm" is not in "15 cm" nor in "0.5 cm"). An emphasis
mark is dropped only where it is markup (`*x*`, `__x__`), so a fact like "A*" keeps its star and
must appear as "A*", not as any word "a".

Questions are *judged* when their right outcome is known: out of scope (any answer is wrong) or in
scope with key facts. In-scope questions without key facts count for retrieval only.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.config import Settings
from rag.errors import InputError
from rag.tuning.questions import Question

if TYPE_CHECKING:
    from rag.answer.pipeline import Pipeline
    from rag.types import Response

ANSWERED = ("success", "partial")
LEVELS = ("high", "medium", "low")
N_BINS = 10
DASH_RE = re.compile("[-\u2010\u2011\u2012\u2013\u2014\u2015]")
LINKED_CITATION_RE = re.compile(r"\[\[\s*S?\d+\s*\]\]\([^)\s]*\)", re.IGNORECASE)  # [[1]](url)
CITATION_RE = re.compile(r"\[\s*S?\d+(?:\s*[,;]\s*S?\d+)*\s*\]", re.IGNORECASE)  # [S1], [1, 2]
LINK_RE = re.compile(r"!?\[([^\[\]]*)\]\([^)\s]*\)")  # [text](url) -> text
HEADING_RE = re.compile(r"^[ \t]*#{1,6}(?=\s)|[ \t]+#+[ \t]*$", re.MULTILINE)
BULLET_RE = re.compile(r"^[ \t]*[*+](?=\s)", re.MULTILINE)  # "- item" is a dash, read as space
STAR_RE = re.compile(r"(\*{1,3})(?!\s)(.+?)(?<!\s)\1")
# CommonMark: `_` opens and closes emphasis only at word edges, so snake_case stays whole
UNDERSCORE_RE = re.compile(r"(?<![^\W_])(_{1,3})(?!\s)(.+?)(?<!\s)\1(?![^\W_])")
NUMBER_UNIT_RE = re.compile(r"(?<=\d) ?(?=[^\W\d_])")  # between "64" and "GB", spaced or not
QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})
Progress = Callable[[str, float], None]


def normalise_text(text: str) -> str:
    """The text key facts are looked for in (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(QUOTES).replace("`", "")
    text = BULLET_RE.sub(" ", HEADING_RE.sub(" ", text))
    for pattern in (STAR_RE, UNDERSCORE_RE, STAR_RE):  # nested: ***x***, **_x_**
        text = pattern.sub(r"\2", text)
    text = LINKED_CITATION_RE.sub(" ", text)
    text = CITATION_RE.sub(" ", LINK_RE.sub(r"\1", text))
    return " ".join(DASH_RE.sub(" ", text.casefold()).split())


def _fact_pattern(fact: str) -> re.Pattern[str]:
    """Whole words at the fact's word edges; a number does not continue "0.5" or "1,500"; a
    number and the unit after it match with or without a space ("64 GB" is "64GB")."""
    start = r"(?<![^\W_])" if fact[0].isalnum() else ""
    start += r"(?<!\d[.,])" if fact[0].isdigit() else ""
    end = r"(?![^\W_])" if fact[-1].isalnum() else ""
    end += r"(?![.,]\d)" if fact[-1].isdigit() else ""
    body = " ?".join(re.escape(part) for part in NUMBER_UNIT_RE.split(fact))
    return re.compile(start + body + end)


def key_facts_found(answer: str, facts: Iterable[str]) -> tuple[bool, ...]:
    """Per fact: does the answer contain it? A fact with no text left after normalising (only
    marks or dashes) cannot be checked and counts as missing."""
    text = normalise_text(answer)
    found = []
    for fact in facts:
        key = normalise_text(fact)
        found.append(bool(key) and _fact_pattern(key).search(text) is not None)
    return tuple(found)


def contains_key_facts(answer: str, facts: Iterable[str]) -> bool:
    """True when the answer contains every key fact (and so for no facts at all)."""
    return all(key_facts_found(answer, facts))


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
    def missing_facts(self) -> tuple[str, ...]:
        return tuple(f for f, ok in zip(self.key_facts, self.facts_found, strict=False) if not ok)

    def to_dict(self, with_answer: bool = True) -> dict[str, Any]:
        out = {"question": self.question, "in_scope": self.in_scope, "status": self.status,
               "answered": self.answered, "correct": self.correct if self.judged else None,
               "missing_facts": list(self.missing_facts), "confidence": self.confidence,
               "level": self.level, "held_by_gate": self.held_by_gate,
               "reason_codes": list(self.reason_codes), "latency_ms": self.latency_ms}
        return out | ({"answer": self.answer} if with_answer else {})


def outcome_of(question: Question, response: Response, latency_ms: float) -> AnswerOutcome:
    """A Response judged against the question's labels."""
    overrides = [v for v in response.verdicts if v.action == "override"]
    held = (response.status == "refused" and response.draft is not None and bool(overrides)
            and all(v.guardrail == "confidence" for v in overrides))
    text = response.answer if response.status in ANSWERED else (
        response.draft.text if held and response.draft is not None else "")
    return AnswerOutcome(question.question, question.in_scope, question.key_facts,
                         response.status, float(response.confidence.score),
                         str(response.confidence.level), key_facts_found(text, question.key_facts),
                         tuple(response.reason_codes), response.answer, round(latency_ms, 2),
                         held)


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
        out.append(outcome_of(q, response, (time.perf_counter() - started) * 1000))
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
                     "correct": correct, "accuracy": _ratio(correct, answered)})
    return rows


def _answered_judged(outcomes: Sequence[AnswerOutcome]) -> list[AnswerOutcome]:
    return [o for o in outcomes if o.judged and o.answered]


def expected_calibration_error(outcomes: Sequence[AnswerOutcome], bins: int = N_BINS
                               ) -> float | None:
    """Σ over equal-width confidence bins of (share of answers) × |accuracy − mean confidence|,
    over answered judged questions (an answered out-of-scope question is wrong)."""
    answered = _answered_judged(outcomes)
    if not answered:
        return None
    groups: dict[int, list[AnswerOutcome]] = {}
    for o in answered:
        # + 1e-9: 0.3 × 10 may land a hair under 3 and fall into the bin below
        b = min(max(math.floor(o.confidence * bins + 1e-9), 0), bins - 1)
        groups.setdefault(b, []).append(o)
    return sum(len(g) / len(answered) * abs(np.mean([o.correct for o in g])
                                            - np.mean([o.confidence for o in g]))
               for g in groups.values())


def confidence_auroc(outcomes: Sequence[AnswerOutcome]) -> float | None:
    """P(a right answer's confidence > a wrong one's), ties counted half (Mann–Whitney U / n₊n₋);
    None when all answers are right or all wrong."""
    answered = _answered_judged(outcomes)
    right = np.array([o.confidence for o in answered if o.correct])
    wrong = np.array([o.confidence for o in answered if not o.correct])
    if not len(right) or not len(wrong):
        return None
    diff = right[:, None] - wrong[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


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


def summarise_answers(outcomes: Sequence[AnswerOutcome]) -> dict[str, Any]:
    """Every answer metric of one pass, JSON-ready (rates rounded to 4 places)."""
    graded = [o for o in outcomes if o.in_scope and o.key_facts]
    outside = [o for o in outcomes if not o.in_scope]
    latencies = [o.latency_ms for o in outcomes]
    return {
        "n_questions": len(outcomes), "n_with_key_facts": len(graded),
        "n_without_key_facts": sum(o.in_scope and not o.key_facts for o in outcomes),
        "n_out_of_scope": len(outside), "correct": sum(o.correct for o in graded),
        "accuracy": _round(answer_accuracy(outcomes)),
        "answered_out_of_scope": sum(o.answered for o in outside),
        "false_answer_rate": _round(false_answer_rate(outcomes)),
        "per_level": [{k: _round(v) if k == "accuracy" else v for k, v in row.items()}
                      for row in level_table(outcomes)],
        "ece": _round(expected_calibration_error(outcomes)),
        "auroc": _round(confidence_auroc(outcomes)),
        "mean_latency_ms": round(float(np.mean(latencies)), 1) if latencies else None,
        "risk_coverage": [{k: _round(v) if isinstance(v, float) else v for k, v in row.items()}
                          for row in risk_coverage(outcomes)],
    }
