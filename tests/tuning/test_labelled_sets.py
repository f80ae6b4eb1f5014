"""The project's labelled sets quote their books: every wording of every key fact is in the book
(the first in a section the question expects), so a correct extractive answer can contain it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.book.parse import parse_book
from rag.tuning.key_facts import key_facts_found, wordings
from rag.tuning.metrics import entry_matches
from rag.tuning.questions import load_questions
from tests.builders import SAMPLE_BOOK, SAMPLE_QUESTIONS, shared_path


def _unquoted(book: Path, question_set: Path) -> list[str]:
    sections = parse_book(book).sections
    whole = " ".join(s.text for s in sections)
    problems = []
    for q in load_questions(question_set):
        expected = " ".join(s.text for s in sections if any(
            entry_matches(e, s.chapter_id, s.section_id) for e in q.expected_sections))
        for fact in q.key_facts:
            first, *others = wordings(fact)
            if not key_facts_found(expected, [first])[0]:
                problems.append(f"{q.question}: {first!r} is not in an expected section")
            problems.extend(f"{q.question}: {w!r} is not in the book" for w in others
                            if not key_facts_found(whole, [w])[0])
    return problems


@pytest.mark.parametrize("book, question_set", [
    (None, SAMPLE_QUESTIONS),
    *(("physical-ai-book", SAMPLE_QUESTIONS.with_name(f"physical-ai{part}.yaml"))
      for part in ("", "-heldout", "-blind", "-blind2", "-blind3", "-blind4", "-blind5",
                   "-train1", "-train2", "-quantities", "-parts", "-dev6", "-blind6", "-values")),
    *((folder, SAMPLE_QUESTIONS.with_name(f"{name}{part}.yaml"))
      for folder, name in (("fastapi-docs", "fastapi"), ("d2l-book", "d2l"),
                           ("content-guide", "content-guide"))
      for part in ("", "-blind")),
])
def test_every_key_fact_is_quoted_from_its_book(book, question_set):
    root = SAMPLE_BOOK if book is None else shared_path(book)
    assert _unquoted(root, question_set) == []


def test_a_fact_the_book_does_not_hold_is_reported(tmp_path):
    question_set = tmp_path / "set.yaml"
    question_set.write_text(
        'questions:\n  - question: "How late is the image?"\n'
        '    expected_sections: ["sensing-intro#timing-sync"]\n    in_scope: true\n'
        '    category: factual\n    key_facts: ["5 cm | marmalade zebra", "steady-state offset"]\n',
        encoding="utf-8")
    assert _unquoted(SAMPLE_BOOK, question_set) == [
        "How late is the image?: 'marmalade zebra' is not in the book",
        "How late is the image?: 'steady-state offset' is not in an expected section"]
