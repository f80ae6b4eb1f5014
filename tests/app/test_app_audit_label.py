"""Labels from the audit drill-down through AppTest: a question asked in the chat is marked with
the section that answers it and a key fact, joins an existing question set (its comments kept)
with the log_id it came from, is refused a second time, and can start a new set as out of
scope."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from rag.tuning.question_sets import read_header
from rag.tuning.questions import load_questions
from tests.builders import ask, open_app

pytestmark = pytest.mark.slow
SECTION = "proprioceptive-sensing#incremental-vs-absolute"
REVIEWED = """# Reviewed questions for the sample book.
questions:
  - question: "Why does a humanoid's heading estimate drift?"
    expected_sections: ["proprioceptive-sensing#imu-errors"]
    in_scope: true
"""


@pytest.fixture()
def drilled(sample_settings, sample_index, monkeypatch, tmp_path):
    """A question asked in the chat, its audit row selected; (AppTest, question, log_id, set)."""
    folder = tmp_path / "eval"
    folder.mkdir()
    (folder / "reviewed.yaml").write_text(REVIEWED, encoding="utf-8")
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb",
                  RAG_EVAL_DIR=str(folder))
    question = f"Why must robots home incremental encoders? ({uuid.uuid4().hex[:6]})"
    ask(at, question)
    at.switch_page("pages/audit.py").run()
    at.session_state["audit_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    log = next(d.value for d in at.dataframe if "user_query_text" in d.value.columns)
    assert log.iloc[0]["user_query_text"] == question
    return at, question, str(log.iloc[0]["log_id"]), folder


def add(at, log_id: str) -> None:
    next(b for b in at.button if b.key == f"audit_label_{log_id}_add").click().run()
    assert not at.exception, at.exception


def test_a_logged_question_joins_a_set_with_its_section_and_key_fact(drilled):
    at, question, log_id, folder = drilled
    assert any(e.label == "Label this question for tuning" for e in at.expander)
    sections = at.multiselect(key=f"audit_label_{log_id}_sections")
    assert any(SECTION in option for option in sections.options)
    sections.set_value([SECTION])
    at.text_input(key=f"audit_label_{log_id}_fact").input("homing routine")
    at.selectbox(key=f"audit_label_{log_id}_set").set_value("reviewed.yaml")
    at.run()
    add(at, log_id)
    assert any("Added to" in m.value and "reviewed.yaml (2 questions now)" in m.value
               for m in at.success), [e.value for e in at.error]
    path = folder / "reviewed.yaml"
    assert path.read_text(encoding="utf-8").startswith(REVIEWED)  # comments and layout kept
    labelled = load_questions(path)[-1]
    assert (labelled.question, labelled.expected_sections, labelled.key_facts,
            labelled.from_audit, labelled.in_scope) == (question, (SECTION,), ("homing routine",),
                                                         log_id, True)
    add(at, log_id)  # the same question again
    assert any("already asks this question (line 6)" in e.value for e in at.error)
    assert len(load_questions(path)) == 2


def test_out_of_scope_into_a_new_set_and_no_section_is_a_message(drilled):
    at, question, log_id, folder = drilled
    at.selectbox(key=f"audit_label_{log_id}_set").set_value("New set…").run()
    add(at, log_id)  # in scope, but no section picked
    assert any("Pick the section(s) that answer the question" in e.value for e in at.error)
    assert not (folder / "audit-labels.yaml").exists()
    at.checkbox(key=f"audit_label_{log_id}_outside").check().run()
    at.text_input(key=f"audit_label_{log_id}_new").input("reviewed.yaml").run()
    add(at, log_id)
    assert any("reviewed.yaml already exists; pick it in the list" in e.value for e in at.error)
    at.text_input(key=f"audit_label_{log_id}_new").input("probes.yaml").run()
    add(at, log_id)
    created = Path(folder, "probes.yaml")
    [probe] = load_questions(created)
    assert (probe.question, probe.in_scope, probe.category, probe.from_audit) == (
        question, False, "off_topic", log_id)
    assert read_header(created.read_text(encoding="utf-8"), created.name)["created_from"] == \
        "audit log labels"
