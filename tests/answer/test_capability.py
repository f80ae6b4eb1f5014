"""The capability boundary on books of several kinds: requests to write new code refused,
questions the book answers with its own code answered; which capabilities a book refuses is
its setting ([guardrails] disallowed_capabilities). Questions in our own words."""

from __future__ import annotations

import pytest

from rag.answer import capability as c
from rag.config.capabilities import DEFAULT_DISALLOWED

BOOK = "A Book"
# Requests addressed to Folio for new code, as readers of different books write them
NEW_CODE = [
    "Write me code for PID control.",  # a robotics course
    "Write a function that checks whether a string is a palindrome.",
    "Give me a script to rename every file in a folder.",
    "Implement a binary search tree for me.",
    "Please write a Rust function that reverses a vector.",  # the Rust book
    "Can you write a dependency that checks the API key header?",  # FastAPI's docs
    "Could you create an endpoint that uploads a file?",
    "Generate code for training a softmax regression on my data.",  # d2l
    "I need a script that downloads the dataset every night.",
    "Write a CUDA kernel that sums two vectors.",
    "How would I do this in Java?",  # the answer before, carried over to another language
    "Write a test fixture that seeds the database with three users.",  # artefacts by name
    "Give me a docker compose YAML for the app and a database.",
    "Write an Apache configuration that serves the docs folder.",
    "Give me a NumPy implementation of beam search.",
    "Write me a complete blog app with comments and likes.",  # a whole thing, whatever it is
    "Create a working chat server with websockets for me.",
]
# Questions the book answers, with its own code or none
BOOK_QUESTIONS = [
    "How do I declare a path parameter?",
    "How do I return a 404 error from a path operation?",
    "How do I write a test for a path operation?",
    "How do I derive Debug for a struct?",
    "How do I implement the Display trait?",
    "How do I write a procedural macro?",
    "I'd like users of my library to write #[derive(Describe)] on their types and get a "
    "describe method. How?",
    "I'd like users of my library to be able to write #[derive(Describe)] on their structs. "
    "How do I make that work in Rust?",
    "How do I stop formatting arguments in code review?",
    "What does this code do?",
    "How is softmax regression implemented from scratch?",
    "What code does the book give for linear regression?",
    "How do I build a project with cargo?",
    "Can you show me how to declare a query parameter?",
    "How does the integral term of a PID controller work?",  # the sample book
    "My endpoint currently returns 500 when the body is empty. How do I fix it?",
    "Which configuration does the guide recommend for a new site?",
    "Give me the full list of status codes the book names.",
    "How do I convert it to JSON?",  # a format named is no language to carry an answer over to
    "Show me the JSON the endpoint returns.",  # the book's own, not a new one
    "Show me the implementation of softmax regression.",
    "Build the whole workspace with colcon.",
]
# Questions about the world as it stands now, beside look-alikes the book answers
NOW = [
    "Which framework currently leads the web benchmarks?",
    "Who nowadays holds the record on the GLUE benchmark?",
    "Has version 3 of the style manual been released yet?",
    "What is the latest edition of the Chicago Manual of Style?",
    "When will the next edition of this handbook come out?",
    "What did the project announce last week?",
]
NOT_NOW = [
    "By the last week of the course, what should the project include?",
    "What is due in the next week of the semester plan?",
    "My model currently overfits after two epochs. What does the book suggest?",
]


@pytest.mark.parametrize("question", NOW)
def test_a_question_about_now_is_refused_as_realtime(question: str) -> None:
    verdict = c.check_capability(question, BOOK, "2025-01-31")
    assert verdict is not None and verdict.reason_code == c.CAPABILITY_REALTIME, question


@pytest.mark.parametrize("question", NOT_NOW)
def test_a_time_word_about_the_book_is_no_realtime_question(question: str) -> None:
    assert c.check_capability(question, BOOK, "2025-01-31") is None


@pytest.mark.parametrize("question", NEW_CODE)
def test_a_request_for_new_code_is_refused(question: str) -> None:
    verdict = c.check_capability(question, BOOK, "2025-01-31")
    assert verdict is not None and verdict.reason_code == c.CAPABILITY_CODE


@pytest.mark.parametrize("question", BOOK_QUESTIONS)
def test_a_question_the_book_answers_is_no_request_for_code(question: str) -> None:
    assert c.check_capability(question, BOOK, "2025-01-31") is None


@pytest.mark.parametrize("question", ["Will humanoids replace warehouse workers by 2030?",
                                      "Is Rust going to overtake C++ in 2031?"])
def test_a_prediction_is_refused_as_one(question: str) -> None:
    verdict = c.check_capability(question, BOOK, "2025-01-31")
    assert verdict is not None and verdict.reason_code == c.CAPABILITY_PREDICTION
    assert verdict.message == (f"I only have information from {BOOK} as of 2025-01-31. I cannot "
                               "predict what will happen.")


def test_only_the_disallowed_capabilities_are_refused() -> None:
    code, now = "Write a function that parses a date.", "What is the weather like in Oslo today?"
    later = "Will the framework be rewritten by 2030?"
    assert DEFAULT_DISALLOWED == ("code", "realtime", "predictions")  # SPEC §4: all three
    for disallowed in [(), ("code",), ("realtime",), ("predictions",), DEFAULT_DISALLOWED]:
        refused = {q for q in (code, now, later)
                   if c.check_capability(q, BOOK, "2025-01-31", disallowed=disallowed)}
        expected = {q for name, q in (("code", code), ("realtime", now), ("predictions", later))
                    if name in disallowed}
        assert refused == expected, disallowed


def test_a_book_that_allows_code_answers_a_request_through_the_pipeline(pipeline,
                                                                        settings_for) -> None:
    question = "Write a Python class that implements a PID controller."
    refused = pipeline.answer(question)
    allowed = pipeline.answer(question, settings=settings_for(
        disallowed_capabilities=("realtime", "predictions")))
    assert refused.reason_codes == (c.CAPABILITY_CODE,)
    assert c.CAPABILITY_CODE not in allowed.reason_codes
