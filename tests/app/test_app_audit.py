"""The audit explorer through AppTest: a question asked in the chat shows up with everything
recorded for it; the SQL console refuses writes; a busy or broken audit file breaks nothing."""

from __future__ import annotations

import os
import time
import uuid

import pytest

from tests.builders import ask, markdown_text, open_app

pytestmark = pytest.mark.slow


@pytest.fixture()
def asked(sample_settings, sample_index, monkeypatch):
    """A fresh question asked in the chat, then the audit page opened; (AppTest, question)."""
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db)
    question = f"Why do humanoids use absolute encoders? ({uuid.uuid4().hex[:8]})"
    ask(at, question)
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    return at, question


def log_frame(at):
    return next(d.value for d in at.dataframe if "user_query_text" in d.value.columns)


def test_the_question_just_asked_is_listed_with_kpis(asked):
    at, question = asked
    frame = log_frame(at)
    assert frame.iloc[0]["user_query_text"] == question  # newest first
    assert frame.iloc[0]["status"] in ("success", "partial")
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Questions"].replace(",", "")) >= 1
    assert metrics["Latency p95"].endswith(" s")
    assert [b.label for b in at.get("download_button")] == ["CSV", "Parquet"]


def test_selecting_the_row_shows_everything_recorded(asked):
    at, question = asked
    at.session_state["audit_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    assert not at.exception, at.exception
    text = markdown_text(at)
    assert f"#### {question}" in text
    assert "Searched full book" in text and "](book?module=sensing&" in text
    tables = [d.value for d in at.dataframe]
    hits = next(t for t in tables if {"dense", "bm25_raw", "blended"} <= set(t.columns))
    assert len(hits) >= 1 and hits["blended"].max() > 0
    citations = next(t for t in tables if {"marker", "excerpt"} <= set(t.columns))
    assert citations.iloc[0]["marker"] == "S1"
    assert citations.iloc[0]["url"].startswith("book?module=sensing&chapter=")
    assert any("extractive answerer uses no prompt" in c.value for c in at.code)
    settings = [j for j in at.json if '"w_dense"' in j.value]
    assert settings and '"threshold_source"' in settings[0].value
    # what the offline answer was made from, as the chat's "Why this answer" showed it
    quoted = next(t for t in tables if {"quoted unit", "probability"} <= set(t.columns))
    assert len(quoted) >= 1 and 0 < quoted["probability"].iloc[0] <= 1
    captions = " ".join(c.value for c in at.caption)
    assert "is the fitted chance that this answer is right, from the leading unit's " \
        "probability" in captions
    assert "**More from the book**, shown under the answer" in text


def test_filters_narrow_the_log(asked):
    at, question = asked
    at.text_input(key="audit_text").input(question.split("(")[1].rstrip(")")).run()
    assert list(log_frame(at)["user_query_text"]) == [question]
    at.multiselect(key="audit_statuses").set_value(["error"]).run()
    assert any("No questions match" in i.value for i in at.info)


def test_the_sql_console_refuses_a_write_and_runs_a_read(asked):
    at, _ = asked
    run = next(b for b in at.button if b.label == "Run query")
    at.text_area(key="audit_sql").input("DELETE FROM audit_logs")
    run.click().run()
    assert any(w.value.startswith("Query refused") for w in at.warning), \
        [w.value for w in at.warning]
    at.text_area(key="audit_sql").input("SELECT count(*) AS n FROM audit_logs")
    next(b for b in at.button if b.label == "Run query").click().run()
    result = next(d.value for d in at.dataframe if list(d.value.columns) == ["n"])
    assert int(result.iloc[0]["n"]) >= 1


def test_a_damaged_audit_file_is_moved_aside_and_the_chat_is_still_audited(
        sample_settings, sample_index, monkeypatch, tmp_path):
    """Issue 43, item 9: the chat answered unaudited and the explorer could not open, before."""
    broken = tmp_path / "audit.duckdb"
    broken.write_text("this is not a DuckDB file")
    os.utime(broken, (0, 0))  # not a file DuckDB is creating right now
    at = open_app(monkeypatch, sample_settings.index_dir, broken)
    assert not any("not being audited" in c.value for c in at.caption)
    question = f"What does an incremental encoder output? ({uuid.uuid4().hex[:6]})"
    ask(at, question)
    assert "**Sources**" in markdown_text(at)
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    (moved,) = tmp_path.glob("audit.duckdb.damaged-*")
    assert moved.read_text() == "this is not a DuckDB file"
    assert any(f"moved to `{moved}`" in w.value for w in at.warning)
    assert question in list(log_frame(at)["user_query_text"])


def test_a_busy_audit_file_keeps_answers_and_shows_the_spool(
        sample_settings, sample_index, monkeypatch, held_audit_file):
    at = open_app(monkeypatch, sample_settings.index_dir, held_audit_file)
    question = f"What does an incremental encoder output? ({uuid.uuid4().hex[:6]})"
    ask(at, question)
    assert "**Sources**" in markdown_text(at)
    started = time.monotonic()
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    assert any("in use by another Folio process" in w.value for w in at.warning)
    assert question in list(log_frame(at)["user_query_text"])
    assert time.monotonic() - started < 30


def test_the_question_type_is_recorded_listed_and_filterable(asked):
    at, question = asked
    frame = log_frame(at)
    assert frame.iloc[0]["query_type"] == "Conceptual"  # "Why do ...?" by the rules
    at.text_input(key="audit_text").input(question.split("(")[1].rstrip(")")).run()
    at.multiselect(key="audit_types").set_value(["conceptual"]).run()
    assert list(log_frame(at)["user_query_text"]) == [question]
    at.multiselect(key="audit_types").set_value(["factual"]).run()
    assert any("No questions match" in i.value for i in at.info)
