"""Questions about where the book treats a topic (rag.answer.navigate): "Which chapter covers X?"
is searched by X and answered by naming the chapters and sections that treat it, cited; a topic
the book never names is refused; a question that only looks like one is answered as before."""

from __future__ import annotations

import pytest

from rag.answer.navigate import (
    CHAPTER,
    MENTION,
    SECTION,
    asked_kind,
    navigation_draft,
    numbered,
    topic_terms,
    treats,
    where_topic,
)
from rag.providers.base import Message
from rag.types import Chunk, Hit


@pytest.mark.parametrize(("question", "topic"), [
    ("Which chapter covers URDF?", "URDF"),
    ("What section of the book discusses integral windup?", "integral windup"),
    ("Where does the book talk about the capture point?", "the capture point"),
    ("Where can I read about Kalman filters?", "Kalman filters"),
    ("Where in the book is the zero moment point explained?", "the zero moment point"),
    ("In which lesson is Nav2 explained?", "Nav2"),
    ("Which module is Isaac Sim taught in?", "Isaac Sim"),
    ("Is there a chapter on robot ethics?", "robot ethics"),
    ("Does the book have a section about teleoperation?", "teleoperation"),
    ("which chapter covers pid tuning in more detail", "pid tuning"),
    # not about where the book treats something
    ("What is the capture point?", ""),
    ("Which section of the robot handles balance?", ""),
    ("Which part handles balance in a humanoid?", ""),
    ("Where does the robot store its map?", ""),
    ("Which weeks is Module 3 taught in?", ""),  # a numbered part: rag.retrieval.parts
    ("Where does the book talk about it?", ""),  # a pronoun: the conversation says what
])
def test_the_topic_of_a_question_about_where_the_book_treats_it(question: str, topic: str):
    assert where_topic(question) == topic


def test_the_numbered_kind_of_place_asked_for() -> None:
    assert asked_kind("Which week covers Gazebo?") == "week"
    assert asked_kind("Which module is Isaac Sim taught in?") == "module"
    assert asked_kind("Where does the book talk about grasping?") == ""
    assert asked_kind("Which section explains SDF?") == ""


def hit(chapter: str, path: tuple[str, ...], text: str, blended: float, module: str = "m",
        passed: bool = True) -> Hit:
    chunk = Chunk(chunk_id=f"{chapter}/{path[-1]}", text=text, module_id=module,
                  chapter_id=chapter, section_id=path[-1].lower().replace(" ", "-"),
                  section_title=path[-1], chapter_title=path[0], heading_path=path, stable=True,
                  page=None, ordinal=0, token_count=len(text.split()))
    return Hit(chunk, dense=blended, bm25_raw=0.0, bm25=0.0, blended=blended, rank=1,
               passed=passed, selected=passed)


def test_places_are_named_chapters_first_then_sections_then_mentions() -> None:
    terms = {"gazebo"}
    chapter = hit("gazebo-setup", ("Gazebo Fundamentals", "Worlds"), "A world file.", 0.40,
                  module="module-2-sim", passed=False)
    section = hit("faq", ("FAQ", "Gazebo crashes"), "Check the GPU driver.", 0.45)
    mention = hit("sensors", ("Sensors", "Lidar"), "Gazebo simulates a lidar.", 0.60)
    elsewhere = hit("kits", ("Kits", "Jetson"), "The Jetson runs the stack.", 0.70)
    assert [treats(h, terms) for h in (chapter, section, mention, elsewhere)] == \
        [CHAPTER, SECTION, MENTION, 0]
    draft = navigation_draft("Gazebo", [elsewhere, mention, section], [chapter], kind="week")
    assert draft.text == ("The book treats Gazebo in Gazebo Fundamentals [S1]; and FAQ › Gazebo "
                          "crashes [S2]. It also mentions it in Sensors › Lidar [S3].")
    assert [h.chunk.chapter_id for h in draft.sources] == ["gazebo-setup", "faq", "sensors"]
    assert draft.places == (0, 1, 2) and draft.generation_confidence == 0.9
    assert draft.calibrated and draft.led_by.startswith("a question about where")
    only_text = navigation_draft("Gazebo", [mention, elsewhere])
    assert only_text.text == "The book mentions Gazebo in Sensors › Lidar [S1]."
    assert only_text.generation_confidence == 0.6
    refused = navigation_draft("sourdough", [mention, elsewhere])
    assert refused.places == () and not refused.markers and "not" in refused.text.lower()


def test_the_week_a_place_sits_in_is_said_when_its_name_does_not() -> None:
    chunk = hit("week-6-lesson-1-gazebo-setup", ("Gazebo Fundamentals", "Worlds"), "t", 0.4,
                module="module-2-gazebo-unity").chunk
    assert numbered(chunk, "week", "Gazebo Fundamentals") == " (Week 6)"
    assert numbered(chunk, "module", "Gazebo Fundamentals") == " (Module 2)"
    assert numbered(chunk, "week", "Week 6 Lesson 1: Gazebo") == ""
    assert numbered(chunk, "chapter", "Gazebo Fundamentals") == ""
    span = hit("week-1-2-sensors", ("Sensors", "Lidar"), "t", 0.4).chunk
    assert numbered(span, "week", "Sensors › Lidar") == " (Weeks 1–2)"


def test_words_in_a_tenth_of_the_book_name_no_place(sample_index) -> None:
    """"robot" is in about a fifth of the sample book's units; "ethics" names its chapter."""
    assert topic_terms("robot ethics", sample_index) == {"ethic"}
    assert topic_terms("robot", sample_index) == {"robot"}  # all common: the rarest stays
    assert topic_terms("integral windup", sample_index) == {"integr", "windup"}
    assert topic_terms("robot ethics") == {"robot", "ethic"}  # no book to count in


def test_the_pipeline_names_the_chapter_that_treats_a_topic(pipeline) -> None:
    response = pipeline.answer("Is there a chapter on robot ethics?")
    assert response.status == "success", response.answer
    assert response.answer.startswith("The book treats robot ethics in Ethics and Responsible "
                                      "Deployment [S1]")
    assert response.metadata["retrieval_query"] == "robot ethics"
    assert response.citations[0].chapter_id == "robot-ethics"
    assert response.confidence.level == "high"
    windup = pipeline.answer("Which section explains integral windup?")
    assert windup.answer.startswith("The book treats integral windup in PID Control and Tuning "
                                    "› Integral Windup [S1]")
    assert {c.chapter_id for c in windup.citations} == {"pid-control"}


def test_a_topic_the_book_never_names_is_refused(pipeline) -> None:
    for question in ("Which chapter covers quantum computing?",
                     "Is there a chapter on swarm robotics?",
                     "Where does the book talk about underwater robots?"):
        response = pipeline.answer(question)
        assert response.status == "refused", (question, response.answer)
        assert not response.citations


def test_where_the_book_treats_it_follows_the_conversation(pipeline) -> None:
    first = "What is the capture point?"
    history = [Message("user", first), Message("assistant", pipeline.answer(first).answer)]
    response = pipeline.answer("Where does the book talk about it?", history=history)
    assert response.metadata["retrieval_query"] == "capture point"  # as read: asked()
    assert response.citations[0].chapter_id == "pendulum-models"
    assert "Inverted Pendulum Models and the Capture Point [S1]" in response.answer
