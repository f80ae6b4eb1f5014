"""Starter questions from a book's structure, on two small books written for these tests: an API
reference (task headings over code, noun headings, a code-only heading) and a prose style guide
(imperative headings, a "Words to avoid" list). Verbs and names come from each book's own usage,
so neither book's words appear in the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.tuning.starter import generate_starter, question_problem
from rag.tuning.starter_headings import (
    base_form,
    heading_question,
    read_usage,
    salient_phrases,
    task_question,
)
from rag.tuning.starter_rules import phrase_offline

API_BOOK = {
    "install.md": """# Getting going

## Install the Python client

You can install the client with `pip install gearbox` on any machine. To install it offline,
download the wheel first; it needs Python 3.10. We install it once per project and you can
upgrade it later.

```bash
pip install gearbox
```

## Use Cases

The use cases of the client are dashboards, batch jobs and tests. A use case is not a feature.
""",
    "sprockets.md": """# Sprockets

## Creating a sprocket

Call `make_sprocket()` with a name to create a sprocket; it returns a `Sprocket`. You can create
as many as you need, and you can create them in a loop. To create one lazily, pass `lazy=True`.

```python
s = make_sprocket("dial")
```

## Handling timeouts

You can handle a slow server with `Timeout`: pass `timeout=5` to any call. To handle timeouts and
retries, wrap the call in `retry()`. We handle errors the same way.

## `Sprocket.spin()`

`Sprocket.spin()` turns a sprocket once and returns the new angle.

## 3.2

Nothing in this section names a task.

## Sprocket internals

The first spin variable is a counter, and the second spin variable is a float.
A Sprocket is a small wheel with teeth that meshes with a chain. Each wheel turns freely, and a
wheel with more teeth turns more slowly.
""",
}
GUIDE_BOOK = {
    "style.md": """# Writing well

## Keep sentences short

Write sentences of 20 words or fewer whenever you can. Readers skim, and to keep them reading
you should keep each sentence to one idea. Editors keep a list of long sentences to cut.

## Words to avoid

- leverage (say *use*)
- utilize
- synergy

You should avoid jargon, and you can avoid most of it. Writers avoid these words because
readers avoid long pages.

## Address the reader

Talk to the reader as *you*. A reader is a person with a task, not an audience.
""",
}


def write_book(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def api_set(tmp_path_factory):
    return generate_starter(write_book(tmp_path_factory.mktemp("api") / "book", API_BOOK), 10)


@pytest.fixture(scope="module")
def guide_set(tmp_path_factory):
    return generate_starter(write_book(tmp_path_factory.mktemp("guide") / "book", GUIDE_BOOK),
                            10)


def asked(starter) -> dict[str, tuple[str, ...]]:
    return {q.question: q.key_facts for q in starter.questions if q.in_scope}


def test_an_api_reference_asks_its_task_headings_with_the_code_they_name(api_set):
    questions = asked(api_set)
    assert questions["How do I install the Python client?"] == ("pip install gearbox",)
    assert questions["How do I create a sprocket?"] == ("make_sprocket()",)
    # `Timeout` and `timeout=5` would give the answer away: the next thing the section marks
    assert questions["How do I handle timeouts?"] == ("retry()",)
    assert questions["What is a Sprocket?"] == ("wheel",)  # "small" says nothing of its own


def test_noun_code_number_and_pointing_headings_ask_nothing(api_set):
    text = " ".join(asked(api_set))
    assert "use case" not in text.lower()  # the book writes "the use cases": a noun phrase
    assert "spin" not in text  # a code-only heading, and "the first spin variable"
    assert "3.2" not in text and "internals" not in text


def test_a_prose_guide_asks_its_imperatives_and_its_list(guide_set):
    questions = asked(guide_set)
    assert questions["How do I keep sentences short?"] == ("20 words",)
    assert questions["Which words should I avoid?"] == ("leverage",)
    assert "How do I address the reader?" not in questions  # "you" is no key fact


def test_every_structural_question_passes_the_checks(api_set, guide_set):
    for starter in (api_set, guide_set):
        for q, source in zip(starter.questions, starter.sources, strict=True):
            if q.in_scope:
                assert question_problem(q.question, q.key_facts[0], source) == ""
                assert source and q.expected_sections


def test_verbs_and_names_are_read_from_the_book():
    usage = read_usage(["You can install it.", "To install a Gizmo, we install the Gizmo CLI.",
                        "The gizmo is the Gizmo.", "You can handle errors.", "Handle it: we handle"
                        " it", "to us", "to us"])
    assert {"install", "handle"} <= usage.verbs and "us" not in usage.verbs
    assert "gizmo" in usage.names and "install" not in usage.names
    assert base_form("Handling", usage.verbs) == "handle" and base_form("Installing",
                                                                      usage.verbs) == "install"
    assert task_question("Installing the Gizmo CLI", usage) == "How do I install the Gizmo CLI?"
    assert task_question("2.1 How to handle your errors", usage) == "How do I handle my errors?"
    for title in ("Install it", "Install", "`install()`", "Handling (advanced)", "Use Cases",
                  "Install the gizmo",  # which gizmo? "the" + one common noun points
                  "Let's install it all", "Don't install twice"):  # a name or advice, no task
        assert task_question(title, usage) == "", title


def test_salient_phrases_skip_code_blocks_links_and_listing_numbers():
    usage = read_usage(["You can show it.", "To show it, we show it."])
    raw = ("Listing 5-9 shows `run_all()` and **batch mode** with 12 workers; see "
           "`https://x.org/a`.\n```python\nhidden_call()\n```\n")
    # where the section names code, a bold term is a label, not the answer
    assert salient_phrases(raw, usage) == ["run_all()", "12 workers"]
    assert salient_phrases("Run in **batch mode** with 12 workers.", usage) == [
        "batch mode", "12 workers"]


def test_a_heading_without_a_marked_fact_asks_nothing():
    usage = read_usage(["You can build trust.", "To build trust, we build it slowly."])
    units = [("Trust takes time, and readers notice when it is missing.", "prose")]
    assert heading_question("Build trust", "Trust takes time.", units, usage) is None


@pytest.mark.parametrize("text", [
    "Convolutional neural networks (CNNs) are used for images.",  # a plural acronym
    "The first spaces variable is a string type.",  # which one?
    "The structure of your public API is a major consideration.",  # whose?
    "A loader is a (Python) generator that yields batches.",  # the aside is no class
])
def test_pointing_and_plural_sentences_are_left_alone(text):
    assert phrase_offline(text, "prose", "Loaders and variables", set(),
                          "Loaders and variables CNNs structure") is None


def test_questions_pointing_at_a_place_in_the_book_are_refused():
    source = "The traits are Debug, Clone and Copy."
    for question in ("What are the traits listed here?", "What is the first trait variable?",
                     "Which trait does this example derive?"):
        assert question_problem(question, "Debug", source) == \
            "the question points at a place in the book"
