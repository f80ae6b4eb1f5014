"""app.py itself: the sidebar, the page list, first-start indexing, rebuilds and readable errors."""

from __future__ import annotations

import shutil
import time

import pytest
from streamlit.testing.v1 import AppTest

from rag.config import PROJECT_ROOT
from tests.builders import TIMEOUT, ask, keep_navigation_mode, markdown_text, open_app

pytestmark = pytest.mark.slow
TINY_BOOK = {
    "motors/intro.md": """---
id: motors-intro
title: Electric Motors
---

Electric motors turn current into torque. A brushless motor needs commutation, which means the
controller must know the rotor angle to switch the phase currents at the right moment.

## Gearboxes {#gearboxes}

A gearbox trades speed for torque. A harmonic drive reaches ratios of 100:1 in one stage with
almost no backlash, which is why many robot joints use one.

## Cooling

Motors heat up under load and their winding temperature limits the continuous torque they give.
""",
    "motors/encoders.md": """---
id: encoders
title: Encoders
---

## Absolute encoders {#absolute}

An absolute encoder reports the joint angle at power-up, so the robot needs no homing routine
before it moves. Incremental encoders only count pulses since power-on.
""",
}


def sidebar_text(at: AppTest) -> str:
    """The sidebar's words: the book picker's shown title ("Book: ..."), markdown, captions."""
    picker = [f"Book: {b.format_func(b.value)}" for b in at.sidebar.selectbox if b.label == "Book"]
    return "\n".join(picker + [m.value for m in at.sidebar.markdown]
                     + [c.value for c in at.sidebar.caption])


def test_the_sidebar_describes_book_index_providers_and_settings(
        sample_settings, sample_index, monkeypatch):
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db)
    assert not at.exception and not at.error
    text = sidebar_text(at)
    assert "Book: Foundations of Physical AI" in text
    assert f"20 files · 114 sections · {len(sample_index.chunks)} chunks" in text
    assert "2 sections with a derived ID" in text
    assert "Index up to date" in text
    assert "Embeddings: local MiniLM (offline)" in text
    assert "Answers: extractive" in text and "Vectors: embedded Qdrant (local)" in text
    assert "Audit log: DuckDB audit.duckdb" in text
    s = sample_settings
    assert (f"Dense {s.w_dense:.2f} · BM25 {1 - s.w_dense:.2f} · threshold {s.threshold:.2f} · "
            f"top-k {s.top_k} · pool {s.candidate_pool} · term match {s.w_terms:.2f}") in text
    from pages.components.common.format import words

    assert f"Threshold from: {words(sample_settings.threshold_source)}" in text
    assert "recall_at_k" not in text and "false_answer_rate" not in text
    assert [b.label for b in at.sidebar.button] == ["Rebuild index"]


@pytest.fixture()
def app_copy(tmp_path):
    """app.py and pages/ copied elsewhere, without any tuning page."""
    shutil.copy(PROJECT_ROOT / "app.py", tmp_path / "app.py")
    shutil.copytree(PROJECT_ROOT / "pages", tmp_path / "pages",
                    ignore=shutil.ignore_patterns("tuning.py", "__pycache__"))
    return tmp_path


def test_the_tuning_page_is_listed_only_once_its_file_exists(
        app_copy, sample_settings, sample_index, monkeypatch):
    keep_navigation_mode(monkeypatch)
    monkeypatch.setenv("RAG_INDEX_DIR", str(sample_settings.index_dir))
    monkeypatch.setenv("RAG_AUDIT_DB", str(sample_settings.audit_db))
    at = AppTest.from_file(str(app_copy / "app.py"), default_timeout=TIMEOUT).run()
    with pytest.raises(ValueError, match="tuning"):
        at.switch_page("pages/tuning.py")
    (app_copy / "pages" / "tuning.py").write_text('import streamlit as st\nst.write("tuning")\n')
    at = AppTest.from_file(str(app_copy / "app.py"), default_timeout=TIMEOUT).run()
    at.switch_page("pages/tuning.py").run()
    assert not at.exception
    assert "tuning" in markdown_text(at)


@pytest.fixture()
def tiny_book(tmp_path):
    for name, text in TINY_BOOK.items():
        path = tmp_path / "book" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "book"


def test_first_start_builds_the_index_then_answers_and_rebuilds(tiny_book, tmp_path, embedder,
                                                                monkeypatch):
    at = open_app(monkeypatch, tmp_path / "index", tmp_path / "audit.duckdb",
                  RAG_BOOK=str(tiny_book))
    assert not at.exception and not at.error
    text = sidebar_text(at)
    assert "Index up to date" in text and "2 files · 4 sections" in text
    assert "1 section with a derived ID" in text  # "Cooling" has no {#anchor}
    ask(at, "Why do robots with absolute encoders need no homing?")
    assert "](book?module=motors&chapter=encoders&section=absolute&book=book#absolute" in \
        markdown_text(at)  # the link names its book (the folder tmp_path/book)

    time.sleep(0.01)
    (tiny_book / "motors" / "intro.md").write_text(TINY_BOOK["motors/intro.md"] + "\nMore.\n")
    at.run()
    assert "Index stale: the book changed since it was indexed" in sidebar_text(at)
    next(b for b in at.sidebar.button if b.label == "Update index").click().run()
    assert not at.exception
    assert any("Index ready" in s.value for s in at.sidebar.success)
    assert "Index up to date" in sidebar_text(at)

    next(b for b in at.sidebar.button if b.label == "Rebuild index").click().run()
    assert any("embedded, 0 reused" in s.value for s in at.sidebar.success)


def test_a_broken_settings_file_is_a_readable_error(sample_settings, tmp_path, monkeypatch):
    bad = tmp_path / "settings.toml"
    bad.write_text("[retrieval\nw_dense = ")
    at = open_app(monkeypatch, sample_settings.index_dir, sample_settings.audit_db,
                  RAG_SETTINGS=str(bad))
    assert not at.exception
    assert any("is not valid TOML" in e.value for e in at.error)


def test_a_missing_book_is_a_readable_error_on_every_page(tmp_path, monkeypatch):
    at = open_app(monkeypatch, tmp_path / "index", tmp_path / "audit.duckdb",
                  RAG_BOOK=str(tmp_path / "nowhere"))
    assert not at.exception
    assert any("does not exist" in e.value for e in at.error)
    at.switch_page("pages/inspector.py").run()
    assert not at.exception
    assert any("does not exist" in e.value for e in at.error)
