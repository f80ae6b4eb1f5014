"""Labels from the audit log join question sets: validated like any question, appended to YAML
without touching its comments, refused when the set already asks the question, and written
atomically with the log_id they came from (which a save of the set keeps)."""

from __future__ import annotations

import dataclasses

import pytest

from rag.errors import InputError
from rag.tuning.labels import append_label, make_label, new_set_header
from rag.tuning.question_sets import (
    content_hash,
    parse_question_text,
    read_header,
    save_question_set,
    serialize_questions,
)
from rag.tuning.questions import Question, load_questions
from tests.builders import HAND_BOOK

LOG_ID = "0b7c7f7e-5a1e-4c5e-9f55-3f1d8a9c2b10"
COMMENTED = """# Questions a reviewer kept.
questions:
  # ---- chapter a ----
  - question: "How is a#2 explained?"
    expected_sections: ["a#2"]
    in_scope: true
    notes: "asked twice"
  - {question: "What is a recipe for bread?", in_scope: false}  # a probe
"""


def label(question: str = "What does section b#1 say?", sections=("b#1",), facts=("torque",)):
    return make_label(question, list(sections), list(facts), LOG_ID, HAND_BOOK)


def test_a_label_is_a_validated_question_that_names_its_log():
    q = label()
    assert q == Question("What does section b#1 say?", ("b#1",), True, "from_audit", 1,
                         ("torque",), LOG_ID)
    assert make_label("Off topic?", [], [], LOG_ID, HAND_BOOK, in_scope=False,
                      category="off_topic").in_scope is False
    with pytest.raises(InputError, match="'zz#9' is not a section of this book"):
        label(sections=("zz#9",))
    with pytest.raises(InputError, match="Pick the section"):
        label(sections=())
    with pytest.raises(InputError, match="at most 3 key facts"):
        label(facts=("a", "b", "c", "d"))
    with pytest.raises(InputError, match="`question` must be non-empty"):
        label(question="  ")
    with pytest.raises(InputError, match="log_id"):
        make_label("Why?", ["a#1"], [], "not a log id!", HAND_BOOK)


def test_appending_to_yaml_keeps_its_comments_and_fields(tmp_path):
    path = tmp_path / "reviewed.yaml"
    path.write_text(COMMENTED, encoding="utf-8")
    result = append_label(path, label())
    text = path.read_text(encoding="utf-8")
    assert text.startswith(COMMENTED) and not result.rewritten and result.count == 3
    added = text[len(COMMENTED):]
    assert added.startswith('  - question: "What does section b#1 say?"\n')
    assert f'    from_audit: "{LOG_ID}"\n' in added
    questions = load_questions(path)
    assert questions[-1] == dataclasses.replace(label(), line=9)
    assert [q.question for q in questions[:2]] == ["How is a#2 explained?",
                                                   "What is a recipe for bread?"]


def test_the_same_question_twice_is_refused_and_nothing_changes(tmp_path):
    path = tmp_path / "reviewed.yaml"
    path.write_text(COMMENTED, encoding="utf-8")
    with pytest.raises(InputError, match=r"already asks this question \(line 4\)"):
        append_label(path, label(question="how is  A#2 explained?", sections=("a#2",)))
    assert path.read_text(encoding="utf-8") == COMMENTED


def test_sets_that_cannot_take_an_append_are_rewritten_whole(tmp_path):
    flow = tmp_path / "flow.yaml"
    flow.write_text('generated: "offline"\nquestions: [{question: "How is a#2 explained?", '
                    'expected_sections: ["a#2"]}]\n', encoding="utf-8")
    result = append_label(flow, label())
    assert result.rewritten and result.count == 2
    assert read_header(flow.read_text(encoding="utf-8"), flow.name) == {"generated": "offline"}
    assert load_questions(flow)[-1].from_audit == LOG_ID
    table = tmp_path / "set.csv"
    table.write_text("question,expected_sections\nHow is a#2 explained?,a#2\n", encoding="utf-8")
    assert append_label(table, label()).rewritten
    again = load_questions(table)
    assert [q.from_audit for q in again] == ["", LOG_ID]


def test_a_new_set_is_created_with_its_provenance(tmp_path):
    path = tmp_path / "audit-labels.yaml"
    result = append_label(path, label(), new_set_header("data/book"))
    assert result.created and result.count == 1
    header = read_header(path.read_text(encoding="utf-8"), path.name)
    assert header["created_from"] == "audit log labels" and header["book"] == "data/book"
    assert load_questions(path)[0].from_audit == LOG_ID


def test_from_audit_survives_a_save_and_changes_the_set_identity(tmp_path):
    q = label()
    plain = Question(q.question, q.expected_sections, q.in_scope, q.category, 0, q.key_facts)
    assert content_hash([q]) != content_hash([plain])
    assert content_hash([plain]) == content_hash(parse_question_text(
        serialize_questions([plain], ".yaml"), "x.yaml"))  # unchanged for sets without it
    saved = save_question_set([q], tmp_path / "x.yaml", {"book": "b"})
    assert load_questions(saved)[0].from_audit == LOG_ID
