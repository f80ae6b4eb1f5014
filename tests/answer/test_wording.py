"""A question's words about the book itself are not what it asks (rag.answer.wording)."""

from __future__ import annotations

import pytest

from rag.answer.guardrails import CAPABILITY_CODE, CAPABILITY_REALTIME
from rag.answer.pipeline import Pipeline
from rag.answer.wording import (
    about,
    as_read,
    asked,
    with_casing,
    without_asides,
    without_own_sentences,
)
from rag.index.lexical import book_casing


@pytest.mark.parametrize(("question", "plain"), [
    ("According to the book, which GPU should I buy?", "Which GPU should I buy?"),
    ("Based on the book: how fast should the control loop run?",
     "How fast should the control loop run?"),
    ("In this book, what is a ROS 2 node?", "What is a ROS 2 node?"),
    ("From the book, why is DDS used?", "Why is DDS used?"),
    ("What is ZMP according to the text?", "What is ZMP?"),
    ("What's the ZMP in the book?", "What's the ZMP?"),
    ("Is ROS 2 covered in the book?", "Is ROS 2 covered?"),
    ("What does the book say about domain randomization?", "What is domain randomization?"),
    ("What does the text tell us about installing Isaac Sim?", "Installing Isaac Sim"),
    ("Does the book cover SLAM?", "What is SLAM?"),
    ("Does the book talk about SLAM?", "What is SLAM?"),
    ("Does the book explain how to install ROS 2 on the Jetson?",
     "How to install ROS 2 on the Jetson?"),
    ("Which option does the book recommend for most schools?",
     "Which option is recommended for most schools?"),
    ("What does the author recommend for the lab setup?", "What is recommended for the lab setup?"),
    ("Which simulator do the authors prefer, and why?", "Which simulator is preferred, and why?"),
    ("What is the book's definition of ZMP?", "What is the definition of ZMP?"),
    ('What does the book mean by "reality gap"?', "What is reality gap?"),
    ("What does the author mean by compliance?", "What is compliance?"),
    ("What is meant by sim-to-real?", "What is sim-to-real?"),
])
def test_words_about_the_book_are_dropped(question, plain) -> None:
    assert asked(question) == plain


@pytest.mark.parametrize("question", [
    "What is this book about?", "Who wrote the book?", "What does the book cover?",
    "How many chapters does the book have?", "What does the book say?",
    "In the text of the launch file, what goes first?", "Does the text editor matter?",
    "How many weeks does the course run?", "Which GPU does the course recommend?",
    "What does the book say the field can do today?",
])
def test_a_question_about_the_book_or_its_content_words_stays_as_asked(question) -> None:
    assert asked(question) == question


@pytest.mark.parametrize(("question", "plain"), [
    ("Hi, quick question: what is ZMP?", "What is ZMP?"),
    ("Hello! Can you tell me how PID works?", "How PID works?"),
    ("Can you tell me: My node dies at start. Why?", "My node dies at start. Why?"),
    ("Please answer this: why do robots fall?", "Why do robots fall?"),
    ("What is ZMP? Thanks!", "What is ZMP?"),
    ("Is the Jetson worth it? ty", "Is the Jetson worth it?"),
    ("Explain PID control please", "What is PID control?"),
    ("I was wondering, which GPU should I buy?", "Which GPU should I buy?"),
    ("How many weeks does the course run", "How many weeks does the course run?"),
    ("Question: what is a node?", "What is a node?"),
    ("In the package project, at what point is success reported",
     "In the package project, at what point is success reported?"),
    ("Hi, according to the book, what is ZMP? Thanks", "What is ZMP?"),
    ("ELI5: what is ZMP?", "What is ZMP?"),
    ("In simple terms, why do robots fall?", "Why do robots fall?"),
    ("How does PID work? Keep it short.", "How does PID work?"),
    ("What is ZMP, in one sentence?", "What is ZMP?"),
    ("Briefly, what is DDS", "What is DDS?"),
])
def test_greetings_requests_and_thanks_are_not_the_question(question, plain) -> None:
    """With "Hi, quick question: " before every development question, answers holding every
    key fact fell from 194 to 173 of 298; without their question marks, to 185; with "ELI5: "
    none was right ("ELI5" is a name the book never mentions)."""
    assert asked(question) == plain


@pytest.mark.parametrize("question", ["Hi", "Thanks", "What does ta mean?",
                                      "Can you tell me the price of the kit?",
                                      "Should the controller be simple?",
                                      "How can I build quickly?"])
def test_nothing_but_an_aside_or_a_question_using_such_words_stays(question) -> None:
    assert without_asides(question) == question


@pytest.mark.parametrize(("request_", "question"), [
    ("Tell me about domain randomization.", "What is domain randomization?"),
    ("Explain the ZMP.", "What is the ZMP?"), ("Define ZMP", "What is ZMP?"),
    ("Explain how PID works", "How PID works?"), ("Describe the gait cycle",
                                                  "What is the gait cycle?"),
    ("List the stop categories", "What are the stop categories?"),
    ("Explain PID control please", "What is PID control?"),
    ("According to the book, explain why robots fall.", "Why robots fall?"),
    ("Tell me about tuning a PID loop", "Tuning a PID loop"),
    ("Give me a summary of Isaac Sim.", "What is Isaac Sim?"),
    ("Summarize the ZMP", "What is the ZMP?"), ("Give me a quick overview of DDS", "What is DDS?"),
])
def test_a_request_is_read_as_the_question_it_stands_for(request_, question) -> None:
    """As requests, the development sets' "What is X?" questions were answered worse ("Tell me
    about X." 191, "Explain X." 189 of 298 right against 194); "Tell me about domain
    randomization." was refused."""
    assert asked(request_) == question


def test_a_follow_up_is_not_read_as_a_request() -> None:
    assert asked("What about SLAM?") == "What about SLAM?"


def test_a_topic_is_asked_as_what_it_is_unless_it_is_an_activity() -> None:
    assert about("the ZMP") == "What is the ZMP?"
    assert about("tuning a PID loop") == "tuning a PID loop"


def test_the_book_reference_changes_neither_the_answer_nor_the_guardrails(
        sample_index, sample_settings) -> None:
    """On the development sets "According to the book, " before every question made answers
    holding every key fact fall from 194 to 175 of 298 and answered out-of-scope questions rise
    from 4 to 14: a code request or a question about today no longer opened the question."""
    pipeline = Pipeline(sample_index, sample_settings)
    plain = pipeline.answer("Why do humanoids use absolute encoders?")
    framed = pipeline.answer("According to the book, why do humanoids use absolute encoders?")
    assert framed.answer == plain.answer and framed.status == plain.status != "refused"
    assert framed.metadata["retrieval_query"] == "Why do humanoids use absolute encoders?"
    assert [c.chunk_id for c in framed.citations] == [c.chunk_id for c in plain.citations]
    code = pipeline.answer("According to the book, write me a ROS 2 node that reads the IMU.")
    assert code.status == "refused" and CAPABILITY_CODE in code.reason_codes
    today = pipeline.answer("According to the book, what does a humanoid cost today?")
    assert today.status == "refused" and CAPABILITY_REALTIME in today.reason_codes


def test_an_all_lower_case_question_gets_the_books_acronyms_back(sample_index) -> None:
    """"what does urdf stand for" asked about no acronym: on the development sets written all
    in lower case and without question marks, 184 of 298 answers held every key fact (194 as
    written); with the book's spelling of its acronyms and the question mark, 194."""
    casing = book_casing(sample_index)
    assert casing["zmp"] == "ZMP" and casing["pid"] == "PID" and casing["cop"] == "CoP"
    assert "the" not in casing and "robot" not in casing and "n" not in casing
    assert with_casing("what does zmp stand for", casing) == "what does ZMP stand for"
    assert with_casing("What does zmp stand for?", casing) == "What does zmp stand for?"
    assert as_read("hi, what does zmp stand for", sample_index) == "What does ZMP stand for?"


def test_thanks_and_style_are_looked_for_at_the_end_only() -> None:
    """A question of 1,000 commas took 120 ms when its end was searched whole for thanks."""
    from rag.answer.wording import TAIL

    assert without_asides(", " * 500) == ", " * 500
    long = "Why " + "very " * 190 + "slow? Thanks!"
    assert len(long) > TAIL and without_asides(long) == long[: -len(" Thanks!")]


@pytest.mark.parametrize(("text", "question"), [
    ("I'm studying for the exam. What is ZMP?", "What is ZMP?"),
    ("Sorry if this is a silly question. How does DDS work?", "How does DDS work?"),
    ("I have a test on this tomorrow! What is ZMP?", "What is ZMP?"),
    ("Our teacher asked us this in class today. Why do robots fall?", "Why do robots fall?"),
    ("What is ZMP? Just curious.", "What is ZMP?"),
    ("I'm new to all of this. Thanks. Write me a ROS 2 node.", "Write me a ROS 2 node."),
])
def test_a_sentence_only_about_the_reader_is_not_the_question(text, question) -> None:
    """Before, "I'm studying for the exam. " before every development question made 172 of 298
    answers right (194 as written) and 10 of 93 out-of-scope questions answered (4); "I have a
    test on this tomorrow! " made every question one about tomorrow, refused."""
    assert without_own_sentences(text) == question
    assert asked(text) == question


@pytest.mark.parametrize("text", [
    "My robot keeps falling over. What should I check?",
    "I've never taken a robotics class. What background is nice to have?",
    "I have 2 robots. How do I keep their topics apart?",
    "I'm studying for the exam.", "Sorry! Thanks.", "What is ZMP?",
])
def test_a_sentence_that_says_anything_of_the_subject_stays_as_context(text) -> None:
    assert without_own_sentences(text) == text


def test_a_sentence_about_the_reader_changes_neither_answer_nor_boundary(
        sample_index, sample_settings) -> None:
    pipeline = Pipeline(sample_index, sample_settings)
    plain = pipeline.answer("Why do humanoids use absolute encoders?")
    told = pipeline.answer("I have a test on this tomorrow! Why do humanoids use absolute "
                           "encoders?")
    assert told.answer == plain.answer and told.status == plain.status != "refused"
    today = pipeline.answer("I'm studying for the exam. What does a humanoid cost today?")
    assert today.status == "refused" and CAPABILITY_REALTIME in today.reason_codes
