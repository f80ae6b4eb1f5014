"""Confidence = 0.6 × retrieval + 0.4 × generation, or a calibrated answer probability alone;
its level and its gate, hand-computed."""

from __future__ import annotations

import dataclasses

import pytest

from rag.answer.confidence import (
    GATE_ANSWER,
    GATE_CAVEAT,
    GATE_REFUSE,
    confidence_level,
    gate,
    parse_stated_confidence,
    score_confidence,
    strip_stated_confidence,
)
from rag.answer.correctness import answer_probability
from rag.answer.pipeline import Pipeline
from rag.answer.shape import asks_specific
from rag.tuning.answers import confidence_auroc, level_table, outcome_of
from rag.tuning.questions import load_questions
from rag.types import Confidence
from tests.builders import SAMPLE_QUESTIONS


@pytest.mark.parametrize(("retrieval", "generation", "expected"), [
    (0.5, None, Confidence(0.5, 0.8, 0.62, "low")),  # 0.30 + 0.32
    (0.9, 0.92, Confidence(0.9, 0.92, 0.908, "high")),  # 0.54 + 0.368
    (0.75, 0.7, Confidence(0.75, 0.7, 0.73, "medium")),  # 0.45 + 0.28
    (1.0, 1.0, Confidence(1.0, 1.0, 1.0, "high")),
    (0.0, 0.0, Confidence(0.0, 0.0, 0.0, "low")),
    (0.0, None, Confidence(0.0, 0.8, 0.32, "low")),
    (0.3, None, Confidence(0.3, 0.8, 0.5, "low")),  # the local threshold: 0.18 + 0.32
    (1.3, -0.2, Confidence(1.0, 0.0, 0.6, "low")),  # both clipped to [0, 1]
    (0.412345, 0.5, Confidence(0.4123, 0.5, 0.4474, "low")),  # 0.247407 + 0.2, 4 decimals
])
def test_score_confidence(retrieval, generation, expected: Confidence) -> None:
    assert score_confidence(retrieval, generation) == expected


@pytest.mark.parametrize(("score", "level"), [
    (1.0, "high"), (0.8501, "high"), (0.85, "medium"), (0.7, "medium"), (0.6999, "low"),
    (0.0, "low")])
def test_levels_at_the_boundaries(score: float, level: str) -> None:
    assert confidence_level(score) == level


def test_level_boundaries_through_the_formula() -> None:
    # 0.6 × 0.75 + 0.4 × 1.0 = 0.85 exactly: not above 0.85, so medium
    assert score_confidence(0.75, 1.0) == Confidence(0.75, 1.0, 0.85, "medium")
    # 0.6 × 0.5 + 0.4 × 1.0 = 0.70 exactly: medium includes 0.70
    assert score_confidence(0.5, 1.0).level == "medium"
    assert score_confidence(0.4983, 1.0).level == "low"  # 0.69898 -> 0.699


@pytest.mark.parametrize(("score", "answer_at", "caveat_at", "decision"), [
    (0.80, 0.80, 0.60, GATE_ANSWER),
    (0.7999, 0.80, 0.60, GATE_CAVEAT),
    (0.60, 0.80, 0.60, GATE_CAVEAT),
    (0.5999, 0.80, 0.60, GATE_REFUSE),
    # the local embedder's gate from data/settings.toml
    (0.65, 0.65, 0.50, GATE_ANSWER),
    (0.6499, 0.65, 0.50, GATE_CAVEAT),
    (0.50, 0.65, 0.50, GATE_CAVEAT),
    (0.4999, 0.65, 0.50, GATE_REFUSE),
])
def test_gate_boundaries(score, answer_at, caveat_at, decision) -> None:
    assert gate(score, answer_at, caveat_at) == decision


@pytest.mark.parametrize(("reply", "stated", "rest"), [
    ("Integral action removes offset [S1].\nConfidence: 0.92", 0.92,
     "Integral action removes offset [S1]."),
    ("Answer [S1].\n\nconfidence: 0.5\n", 0.5, "Answer [S1]."),
    ("Answer [S1].\nConfidence = 1.0", 1.0, "Answer [S1]."),
    ("Answer [S1].\nConfidence: 0", 0.0, "Answer [S1]."),
    ("Answer [S1]. Confidence: 0.85", 0.85, "Answer [S1]."),
    ("Answer [S1].\n**Confidence:** 0.85", 0.85, "Answer [S1]."),
    ("Answer [S1].\nConfidence: 0.7.", 0.7, "Answer [S1]."),
    ("First [S1].\nConfidence: 0.3\nSecond [S2].\nConfidence: 0.6", 0.6,
     "First [S1].\n\nSecond [S2]."),
    # no stated confidence: the caller uses 0.80
    ("Answer [S1].", None, "Answer [S1]."),
    ("Answer [S1].\nConfidence: 92%", None, "Answer [S1].\nConfidence: 92%"),
    ("Answer [S1].\nConfidence: 1.5", None, "Answer [S1].\nConfidence: 1.5"),
    ("Confidence: 0.9 is what the excerpt gives the filter.", None,
     "Confidence: 0.9 is what the excerpt gives the filter."),
])
def test_parse_and_strip_stated_confidence(reply: str, stated: float | None, rest: str) -> None:
    assert parse_stated_confidence(reply) == stated
    assert strip_stated_confidence(reply) == rest


def test_pipeline_confidence_is_the_offline_answers_probability_of_being_right(
        sample_index, sample_settings) -> None:
    s = sample_settings
    question = "What does the integral term of a PID controller correct?"
    response = Pipeline(sample_index, s).answer(question)
    best = response.retrieval.hits[0].blended
    assert best == max(h.blended for h in response.retrieval.candidates)
    c, draft = response.confidence, response.draft
    assert draft.calibrated and draft.runner_up is not None
    assert 0.0 < draft.runner_up <= draft.supports[0] < 1.0  # the best unit leads the quotes
    # the quotes hold part of the evidence's probability, never all of it here
    assert 0.0 < draft.unquoted < 1.0
    stated = draft.generation_confidence
    assert 0.0 < draft.coverage <= 1.0
    assert stated == round(answer_probability(draft.supports[0], draft.runner_up,
                                              draft.unquoted, asks_specific(question),
                                              draft.coverage, draft.markers[0] == "S1",
                                              bool(draft.asked), draft.around.count(False)), 4)
    # retrieval is reported beside it, but the score is the fitted probability alone
    assert (c.retrieval, c.generation, c.score) == (round(best, 4), stated, stated)
    assert c.level == confidence_level(c.score, s.level_high, s.level_medium)


def test_a_calibrated_generation_confidence_is_the_score() -> None:
    assert score_confidence(0.3, 0.72, calibrated=True) == Confidence(0.3, 0.72, 0.72, "medium")
    assert score_confidence(0.9, 0.72, high=0.7, medium=0.6, calibrated=True).level == "high"
    # uncalibrated, the same numbers blend: 0.54 + 0.288
    assert score_confidence(0.9, 0.72).score == 0.828


def test_levels_follow_the_embedders_calibrated_cut_offs() -> None:
    assert score_confidence(0.5, 0.5).level == "low"  # the design's 0.85 / 0.70
    assert score_confidence(0.5, 0.5, high=0.85, medium=0.5).level == "medium"
    assert score_confidence(0.9, 0.9, high=0.85, medium=0.5).level == "high"


def test_the_offline_confidence_tells_right_answers_from_wrong_ones(pipeline) -> None:
    """On the sample set (whose answers are among those the model was fitted on): the score
    ranks right answers above wrong ones better than the design's blend of the same parts did
    (0.655 when fitted; the blend 0.562), and "high" answers are right at least 9 times in 10
    (7 of 7 when fitted; 4 of 4 since the refit of 2026-11-24, with the former held-out set,
    made "high" rarer: 15 of 262 development answers)."""
    outcomes, blended = [], []
    for q in load_questions(SAMPLE_QUESTIONS):
        response = pipeline.answer(q.question)
        outcome = outcome_of(q, response, 0.0)
        if outcome.judged and outcome.answered:
            assert response.draft.calibrated
            outcomes.append(outcome)
            blended.append(dataclasses.replace(outcome, confidence=round(
                0.6 * response.confidence.retrieval + 0.4 * response.draft.supports[0], 4)))
    assert len(outcomes) >= 80
    assert confidence_auroc(outcomes) >= 0.6
    assert confidence_auroc(outcomes) > confidence_auroc(blended) + 0.03
    high = next(row for row in level_table(outcomes) if row["level"] == "high")
    assert high["answered"] >= 3 and high["accuracy"] >= 0.9, high
