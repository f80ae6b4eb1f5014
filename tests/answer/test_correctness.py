"""The offline answer's probability of being right, from its best unit, the runner-up, the
share of the evidence it leaves unquoted, whether the question asks for something specific, how
much of the question the quotes cover, whether the lead is in retrieval's first section and
whether it came closer to the question through a question the book itself asks, and how many
quotes it needs."""

from __future__ import annotations

import math

import pytest

from rag.answer.correctness import BIAS, WEIGHTS, answer_probability


def test_hand_computed() -> None:
    z = BIAS + WEIGHTS["best"] * 0.6 + WEIGHTS["margin"] * (0.6 - 0.2) + WEIGHTS["coverage"] + \
        WEIGHTS["lead_first"]  # full coverage and a lead in the first section by default
    assert answer_probability(0.6, 0.2) == pytest.approx(1 / (1 + math.exp(-z)))
    z += WEIGHTS["unquoted"] * 0.75
    assert answer_probability(0.6, 0.2, 0.75) == pytest.approx(1 / (1 + math.exp(-z)))
    z += WEIGHTS["specific_best"] * 0.6
    assert answer_probability(0.6, 0.2, 0.75, True) == pytest.approx(1 / (1 + math.exp(-z)))
    z -= WEIGHTS["coverage"] * 0.5 + WEIGHTS["lead_first"]
    assert answer_probability(0.6, 0.2, 0.75, True, 0.5, False) == \
        pytest.approx(1 / (1 + math.exp(-z)))
    z += WEIGHTS["asked"]
    assert answer_probability(0.6, 0.2, 0.75, True, 0.5, False, True) == \
        pytest.approx(1 / (1 + math.exp(-z)))
    z += WEIGHTS["more_quotes"] * 2
    assert answer_probability(0.6, 0.2, 0.75, True, 0.5, False, True, 3) == \
        pytest.approx(1 / (1 + math.exp(-z)))


def test_an_answer_that_needs_more_quotes_scores_lower() -> None:
    """Three quotes say the evidence is scattered: on the development sets such answers were
    right 60 % of the time, those of one or two quotes 77-79 %."""
    assert answer_probability(0.5, 0.3, 0.5, False, 0.7, True, False, 1) > \
        answer_probability(0.5, 0.3, 0.5, False, 0.7, True, False, 2) > \
        answer_probability(0.5, 0.3, 0.5, False, 0.7, True, False, 3)


def test_a_lead_matched_through_the_books_own_question_scores_higher() -> None:
    """A leading unit that answers a question the book itself asks, closer to the reader's than
    the unit's own words (rag.book.quiz), was right for 24 of 29 development answers, the others
    for 140 of 260 (answered out-of-scope questions counted wrong, before the guardrails)."""
    assert answer_probability(0.4, 0.3, 0.5, False, 0.6, True, True) > \
        answer_probability(0.4, 0.3, 0.5, False, 0.6, True, False)


def test_an_answer_covering_more_of_the_question_and_led_from_the_top_section_scores_higher():
    """Quotes that never mention a rare word of the question likely leave a part unanswered;
    a leading unit from the section retrieval ranked first agrees with retrieval."""
    assert answer_probability(0.5, 0.3, 0.5, False, 0.9) > \
        answer_probability(0.5, 0.3, 0.5, False, 0.4)
    assert answer_probability(0.5, 0.3, 0.5, False, 0.7, True) > \
        answer_probability(0.5, 0.3, 0.5, False, 0.7, False)


def test_a_likelier_best_unit_and_a_wider_margin_both_raise_it() -> None:
    assert answer_probability(0.7, 0.3) > answer_probability(0.5, 0.3)  # likelier best unit
    assert answer_probability(0.6, 0.1) > answer_probability(0.6, 0.5)  # clearer lead
    assert answer_probability(0.6, 0.6) < answer_probability(0.6, 0.0)  # a tie is no lead


def test_evidence_left_unquoted_lowers_it() -> None:
    """Much of the evidence's probability outside the quotes: a part of the question is likely
    answered elsewhere."""
    assert answer_probability(0.6, 0.3, 0.9) < answer_probability(0.6, 0.3, 0.4) < \
        answer_probability(0.6, 0.3, 0.0)


def test_a_likely_best_unit_counts_for_more_when_the_question_asks_for_a_number() -> None:
    """A number or a definition is in one sentence or not: the best unit's probability says
    more, so a likely best unit lifts the score further, and an unlikely one less."""
    def odds(p: float) -> float:
        return math.log(p / (1 - p))

    lift = [odds(answer_probability(b, 0.1, 0.3, True)) - odds(answer_probability(b, 0.1, 0.3))
            for b in (0.2, 0.5, 0.8)]  # in log-odds: a probability near 1 has little room left
    assert 0.0 < lift[0] < lift[1] < lift[2]


def test_it_is_a_probability_even_at_the_edges() -> None:
    for best, runner_up in [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.3, 0.9)]:
        for unquoted in (0.0, 1.0):
            for specific in (False, True):
                assert 0.0 < answer_probability(best, runner_up, unquoted, specific) < 1.0
    # a runner-up above the best (never produced, but defined): no negative margin
    assert answer_probability(0.3, 0.9) == answer_probability(0.3, 0.3)
