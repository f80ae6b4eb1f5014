"""The tuning page's starter-set panel through AppTest: a new book with no question set gets one
generated from the book, reviewed and edited in a table, saved with its provenance (never over
an existing file without Overwrite) and picked for the sweep; Claude's failure falls back to the
offline templates with a notice."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rag.tuning.question_sets import read_header
from rag.tuning.questions import load_questions
from rag.tuning.starter import generate_starter
from tests.builders import SAMPLE_BOOK, SAMPLE_QUESTIONS, open_app

pytestmark = pytest.mark.slow
PAGE = "pages/tuning.py"


def workspace(root: Path) -> dict[str, str]:
    """A temp settings file and an empty question-set folder: a book nobody labelled yet."""
    (root / "eval").mkdir(parents=True)
    shutil.copy(Path(SAMPLE_QUESTIONS).parents[1] / "settings.toml", root / "settings.toml")
    return {"RAG_SETTINGS": str(root / "settings.toml"), "RAG_EVAL_DIR": str(root / "eval")}


def click(at, key: str) -> None:
    next(b for b in at.button if b.key == key).click().run()
    assert not at.exception, at.exception


def editor(at):
    return next(e for e in at.data_editor if e.key.startswith("tuning_starter_editor_"))


def test_generate_review_edit_and_save_a_starter_set(sample_settings, sample_index,
                                                      monkeypatch, tmp_path):
    env = workspace(tmp_path / "work")
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", page=PAGE,
                  **env)
    assert not at.exception, at.exception
    assert any("Upload a YAML or CSV question set" in i.value for i in at.info)
    click(at, "tuning_starter_generate")
    expected = generate_starter(SAMPLE_BOOK, 40)
    table = editor(at).value
    assert list(table["question"]) == [q.question for q in expected.questions]
    assert list(table["source"]) == expected.sources  # what each question was made from
    assert any("made by the offline templates" in m.value for m in at.markdown)
    # the reviewer deletes the first question and rewords the second
    reworded = f"{expected.questions[1].question[:-1]} in control?"
    at.session_state[editor(at).key] = {"edited_rows": {1: {"question": reworded}},
                                        "added_rows": [], "deleted_rows": [0]}
    at.run()
    assert at.text_input(key="tuning_starter_name").value == "book-starter.yaml"
    click(at, "tuning_starter_save")
    path = Path(env["RAG_EVAL_DIR"], "book-starter.yaml")
    saved = load_questions(path)
    assert len(saved) == len(expected.questions) - 1 and saved[0].question == reworded
    assert saved[0].expected_sections == expected.questions[1].expected_sections
    header = read_header(path.read_text(encoding="utf-8"), path.name)
    assert header == {"generated": "offline", "date": expected.date, "book": "data/book"}
    assert at.selectbox(key="tuning_set").value == "book-starter.yaml"
    assert any("Saved the starter set" in m.value for m in at.success)
    assert any(b.key == "tuning_run" for b in at.button)  # ready to sweep

    click(at, "tuning_starter_generate")  # again, onto the same name
    click(at, "tuning_starter_save")
    assert any("book-starter.yaml already exists: tick Overwrite" in e.value for e in at.error)
    assert len(load_questions(path)) == len(expected.questions) - 1  # untouched
    at.checkbox(key="tuning_starter_overwrite").check().run()
    click(at, "tuning_starter_save")
    assert len(load_questions(path)) == len(expected.questions)


def test_a_bad_edit_is_refused_by_row_and_nothing_is_written(sample_settings, sample_index,
                                                              monkeypatch, tmp_path):
    env = workspace(tmp_path / "work")
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", page=PAGE,
                  **env)
    click(at, "tuning_starter_generate")
    at.session_state[editor(at).key] = {"edited_rows": {2: {"expected_sections": ""}},
                                        "added_rows": [], "deleted_rows": []}
    at.run()
    click(at, "tuning_starter_save")
    assert any(e.value.startswith("Not saved: Edited table, line 3: an in-scope question needs")
               for e in at.error), [e.value for e in at.error]
    assert not list(Path(env["RAG_EVAL_DIR"]).iterdir())


def test_claude_failing_falls_back_to_offline_with_a_notice(sample_settings, sample_index,
                                                            monkeypatch, tmp_path, claude):
    env = workspace(tmp_path / "work") | {"ANTHROPIC_API_KEY": "test-key",
                                          "ANTHROPIC_BASE_URL": claude.url,
                                          "RAG_LLM": "extractive"}
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", page=PAGE,
                  **env)
    at.radio(key="tuning_starter_how").set_value("claude").run()
    claude.plan(status=529)
    click(at, "tuning_starter_generate")
    assert len(claude.message_requests) == 1
    assert any(w.value.startswith("Claude could not phrase the questions (Claude's service "
                                  "failed (HTTP 529)") for w in at.warning), \
        [w.value for w in at.warning]
    table = editor(at).value
    assert list(table["question"]) == [q.question for q in generate_starter(SAMPLE_BOOK,
                                                                            40).questions]


LABELLED = """generated: "offline"
date: "2026-11-20"
book: "data/book"
questions:
  - question: "What does PID stand for?"
    expected_sections: ["pid-control#"]
    in_scope: true
    key_facts: ["proportional-integral-derivative"]
  - question: "Why must robots home incremental encoders?"
    expected_sections: ["proprioceptive-sensing#incremental-vs-absolute"]
    in_scope: true
    from_audit: "0b7c7f7e-5a1e-4c5e-9f55-3f1d8a9c2b10"
"""


def test_saving_edits_keeps_the_provenance_and_the_audit_links(sample_settings, sample_index,
                                                               monkeypatch, tmp_path):
    env = workspace(tmp_path / "work")
    path = Path(env["RAG_EVAL_DIR"], "labelled.yaml")
    path.write_text(LABELLED, encoding="utf-8")
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", page=PAGE,
                  **env)
    table = next(e for e in at.data_editor if e.key.startswith("tuning_editor_"))
    at.session_state[table.key] = {"edited_rows": {0: {"question": "What does PID mean?"}},
                                   "added_rows": [], "deleted_rows": []}
    at.run()
    next(b for b in at.button if b.key == f"{table.key}_save").click().run()
    assert not at.exception, at.exception
    assert any("Saved 2 questions" in m.value for m in at.success)
    text = path.read_text(encoding="utf-8")
    assert read_header(text, path.name) == {"generated": "offline", "date": "2026-11-20",
                                            "book": "data/book"}
    saved = load_questions(path)
    assert saved[0].question == "What does PID mean?"
    assert [q.from_audit for q in saved] == ["", "0b7c7f7e-5a1e-4c5e-9f55-3f1d8a9c2b10"]
