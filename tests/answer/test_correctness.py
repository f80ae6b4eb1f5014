"""The offline answer's probability of being right, from its best unit, the runner-up and the
share of the evidence it leaves unquoted."""

from __future__ import annotations

import math

import pytest

from rag.answer.correctness import BIAS, WEIGHTS, answer_probability


def test_hand_computed() -> None:
    z = BIAS + WEIGHTS["best"] * 0.6 + WEIGHTS["margin"] * (0.6 - 0.2)
    assert answer_probability(0.6, 0.2) == pytest.approx(1 / (1 + math.exp(-z)))
    z += WEIGHTS["unquoted"] * 0.75
    assert answer_probability(0.6, 0.2, 0.75) == pytest.approx(1 / (1 + math.exp(-z)))


def test_a_likelier_best_unit_and_a_wider_margin_both_raise_it() -> None:
    assert answer_probability(0.7, 0.3) > answer_probability(0.5, 0.3)  # likelier best unit
    assert answer_probability(0.6, 0.1) > answer_probability(0.6, 0.5)  # clearer lead
    assert answer_probability(0.6, 0.6) < answer_probability(0.6, 0.0)  # a tie is no lead


def test_evidence_left_unquoted_lowers_it() -> None:
    """Much of the evidence's probability outside the quotes: a part of the question is likely
    answered elsewhere."""
    assert answer_probability(0.6, 0.3, 0.9) < answer_probability(0.6, 0.3, 0.4) < \
        answer_probability(0.6, 0.3, 0.0)


def test_it_is_a_probability_even_at_the_edges() -> None:
    for best, runner_up in [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.3, 0.9)]:
        for unquoted in (0.0, 1.0):
            assert 0.0 < answer_probability(best, runner_up, unquoted) < 1.0
    # a runner-up above the best (never produced, but defined): no negative margin
    assert answer_probability(0.3, 0.9) == answer_probability(0.3, 0.3)
