"""A unit that restates the question counts less than one that answers it, on any kind of book
(rag.answer.restated); one that takes a stance on what the question asks keeps its weight."""

from __future__ import annotations

import pytest

from rag.answer.restated import restated_shares
from rag.answer.tuned import RESTATED_FLOOR
from rag.index.lexical import tokenize


def shares(question: str, *texts: str) -> list[float]:
    return list(restated_shares(set(tokenize(question)), [tokenize(t) for t in texts], texts))


def test_an_api_reference_setup_restating_the_problem_counts_less_than_its_fix() -> None:
    question = "My config loader reads the settings file again on every request. How do I " \
        "load the settings only once?"
    setup = "Each request would read the settings file again."
    fix = "Wrap the loader in a cache decorator, so the object is built the first time only."
    restated, answer = shares(question, setup, fix)
    assert RESTATED_FLOOR <= restated < 1.0
    assert answer == 1.0


def test_a_prose_guides_sentence_restating_the_question_counts_less() -> None:
    question = "Which tone should our press release use for readers outside government?"
    restated, answer = shares(question,
                              "Press releases reach readers outside government.",
                              "Write as you would speak to a neighbour: plain, warm and direct.")
    assert restated < 1.0 and answer == 1.0


@pytest.mark.parametrize("stance", [
    "It is not necessary to start a domain with www.",  # answers "do we need the www?"
    "Domains should stay short.",
    "A domain never needs www at the start.",
    "You don't need www at the start of a domain.",
])
def test_a_unit_that_takes_a_stance_keeps_its_weight(stance: str) -> None:
    assert shares("Do we need www at the start of our domain?", stance) == [1.0]


def test_a_short_unit_keeps_its_weight_and_every_unit_gets_a_share() -> None:
    assert shares("What does the integral term correct?", "Integral term.") == [1.0]
    assert shares("Anything?") == []
