"""One book never leaks into another, through AppTest: the audit explorer, its charts and console
default to the book being read (with a filter for others), the chat keeps one book's history,
a citation of another book (or of a chapter this book lacks) says so on the Book page, and the
title and tuning provenance come from the book itself."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tomllib
import uuid

import pandas as pd
import pytest

from pages.components.chat.history import History
from pages.components.common.provenance import history_books, threshold_provenance, with_books
from rag.answer.record import history_record
from rag.audit.store import AuditStore
from rag.config import load_settings
from tests.builders import SAMPLE_BOOK, ask, make_response, markdown_text, open_app

pytestmark = pytest.mark.slow
OTHER = ("physical-ai-book", "Physical AI & Humanoid Robotics")


def of_book(book_id: str, title: str, question: str, seed: int = 1):
    response = make_response(question, seed=seed)
    return dataclasses.replace(response, settings={**response.settings, "book_id": book_id,
                                                   "book_title": title})


def log_frame(at):
    return next(d.value for d in at.dataframe if "user_query_text" in d.value.columns)


def bar_labels(at, key: str) -> list[str]:
    """The hover labels of a bar chart (section names, with their book when several)."""
    spec = next(c.proto.spec for c in at.get("plotly_chart") if c.proto.id.endswith(key))
    return [label for bars in json.loads(spec)["data"] for label in bars["customdata"]]


@pytest.fixture()
def explorer(sample_settings, sample_index, monkeypatch, tmp_path):
    """An audit file with another book's answers and a row from before books were recorded,
    then a question asked of the sample book in the chat; the explorer opened on it."""
    db = tmp_path / "audit.duckdb"
    with AuditStore(db) as store:
        for i in range(3):
            store.record(of_book(*OTHER, f"What is ROS 2, take {i}?", seed=1))
        store.record(dataclasses.replace(make_response("Asked before books?", seed=2),
                                         settings={}))
    at = open_app(monkeypatch, sample_settings.index_dir, db)
    question = f"Why do humanoids use absolute encoders? ({uuid.uuid4().hex[:8]})"
    ask(at, question)
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    return at, question


def test_the_explorer_shows_this_books_questions_with_a_book_column(explorer):
    at, question = explorer
    book = at.selectbox(key="audit_book")
    assert book.value == "book"
    assert book.options == ["Foundations of Physical AI (this book)", OTHER[1],
                            "unknown book (logged before books were recorded)", "All books"]
    frame = log_frame(at)
    assert list(frame["user_query_text"]) == [question]
    assert list(frame["book"]) == ["Foundations of Physical AI"]
    assert {m.label: m.value for m in at.metric}["Questions"] == "1"
    never = next(m.value for m in at.markdown if m.value.startswith("**Never-cited"))
    assert never.endswith(" of 114 in Foundations of Physical AI)")
    cited = bar_labels(at, "chart_cited")
    assert cited and all(" › " in label for label in cited)  # named from this book's sections
    assert not any("m1/ch1#" in label or OTHER[1] in label for label in cited)


def test_another_book_or_all_books_are_a_filter_away(explorer):
    at, question = explorer
    at.selectbox(key="audit_book").set_value("*").run()
    assert not at.exception, at.exception
    frame = log_frame(at)
    assert len(frame) == 5 and frame.iloc[0]["user_query_text"] == question
    assert sorted(set(frame["book"])) == sorted({"Foundations of Physical AI", OTHER[1],
                                                 "unknown book"})
    labels = bar_labels(at, "chart_cited")  # bars from several books say which book
    assert f"m1/ch1#s3 · {OTHER[1]}" in labels and "m1/ch1#s2 · unknown book" in labels
    assert any(" › " in label and label.endswith(" · Foundations of Physical AI")
               for label in labels)  # this book's section by its name
    assert any(c.value.startswith("Counted only for the book Folio is reading") for c in
               at.caption)
    at.selectbox(key="audit_book").set_value(OTHER[0]).run()
    assert set(log_frame(at)["book"]) == {OTHER[1]}
    assert {m.label: m.value for m in at.metric}["Questions"] == "3"
    assert not any(m.value.startswith("**Never-cited sections** (") for m in at.markdown)


def test_the_console_starts_on_this_books_view(explorer):
    at, _ = explorer
    assert "FROM book_logs" in at.text_area(key="audit_sql").value
    next(b for b in at.button if b.label == "Run query").click().run()
    assert not at.exception, at.exception
    result = next(d.value for d in at.dataframe if "questions" in d.value.columns)
    assert int(result["questions"].sum()) == 1  # the sample book's one question, not all five
    at.text_area(key="audit_sql").input("SELECT count(*) AS n FROM audit_all")
    next(b for b in at.button if b.label == "Run query").click().run()
    total = next(d.value for d in at.dataframe if list(d.value.columns) == ["n"])
    assert int(total.iloc[0]["n"]) == 5


def test_the_chat_never_shows_another_books_history(sample_settings, sample_index, monkeypatch,
                                                    tmp_path):
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb")
    theirs = history_record(of_book(*OTHER, "What is a ROS 2 node?"))
    at.session_state["_folio_history"] = History(book_id=OTHER[0], turns=[theirs])
    at.run()
    assert not at.exception, at.exception
    assert len(at.chat_message) == 0 and "ROS 2 node" not in markdown_text(at)
    ask(at, "What does an incremental encoder output?")
    h = at.session_state["_folio_history"]
    assert h.book_id == "book" and [t["book_id"] for t in h.turns] == ["book"]
    assert "&book=book" in markdown_text(at)  # its citation links name the book


def open_book_page(monkeypatch, settings, **params: str):
    at = open_app(monkeypatch, settings.index_dir, settings.audit_db)
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page("pages/book.py").run()
    assert not at.exception, at.exception
    return at


def test_a_citation_of_another_book_is_not_opened_as_this_ones(sample_settings, sample_index,
                                                               monkeypatch):
    with AuditStore(sample_settings.audit_db) as store:  # the log remembers its title
        store.record(of_book(*OTHER, "What is ROS 2?"))
    at = open_book_page(monkeypatch, sample_settings, module="sensing", chapter="sensing-intro",
                        section="timing-sync", book=OTHER[0])
    assert [w.value for w in at.warning] == [
        f"This citation is from another book ({OTHER[1]}), not from Foundations of Physical "
        "AI, the book Folio is reading now, so it is not opened here. To read it, run Folio "
        "with that book (RAG_BOOK) or open its published site."]
    assert not at.subheader  # no chapter shown in its place
    next(b for b in at.button if b.key == "reader_start").click().run()
    assert not at.exception and not at.warning
    assert at.selectbox(key="reader_chapter").value == "control/control-intro"
    assert at.subheader[0].value == "Control: From Intent to Torque"


def test_a_chapter_this_book_lacks_is_reported_not_replaced_by_the_intro(
        sample_settings, sample_index, monkeypatch):
    at = open_book_page(monkeypatch, sample_settings, module="module-1-ros2", chapter="intro",
                        section="capture-point", book="book")
    assert at.warning[0].value.startswith("The cited chapter `module-1-ros2/intro#capture-point`"
                                          " is not in Foundations of Physical AI")
    assert not at.subheader
    ok = open_book_page(monkeypatch, sample_settings, module="locomotion",
                        chapter="pendulum-models", section="capture-point", book="book")
    assert not ok.warning and "The Capture Point" in [h.value for h in ok.subheader]


@pytest.fixture(scope="module")
def garden_book(tmp_path_factory):
    """A small book of our own with a book-level title in its root page's frontmatter."""
    root = tmp_path_factory.mktemp("books") / "garden-robots"
    shutil.copytree(SAMPLE_BOOK / "sensing", root / "sensing")
    (root / "index.md").write_text("---\nbook_title: Robots in the Garden\n---\n# Welcome\n\n"
                                   "This book is about robots that tend gardens.\n")
    return root


def test_another_book_is_named_by_itself_and_its_tuning_marked(garden_book, sample_settings,
                                                              sample_index, monkeypatch,
                                                              tmp_path):
    db = tmp_path / "audit.duckdb"
    with AuditStore(db) as store:
        store.record(of_book("book", "Foundations of Physical AI", "A sample-book question?"))
    at = open_app(monkeypatch, tmp_path / "index", db, RAG_BOOK=str(garden_book))
    assert not at.exception, at.exception
    picker = at.sidebar.selectbox(key="folio_book_picker")
    assert picker.value == "garden-robots"
    assert picker.format_func(picker.value) == "Robots in the Garden"
    assert "Foundations of Physical AI" not in " ".join(m.value for m in at.sidebar.markdown)
    assert at.chat_input[0].placeholder == "Ask a question about Robots in the Garden…"
    assert any(c.value.startswith("Threshold from: ") and c.value.endswith(
        " · tuned on another book (data/book)") for c in at.sidebar.caption)
    at.switch_page("pages/audit.py").run()
    assert [i.value for i in at.info] == [
        "No questions match these filters yet. 1 question of other books is logged: choose "
        "another book or All books in the Book filter."]
    at.switch_page("pages/chat.py").run()
    ask(at, "What does an incremental encoder output?")
    assert "&book=garden-robots" in markdown_text(at)
    at.switch_page("pages/audit.py").run()
    assert not at.exception, at.exception
    assert list(log_frame(at)["book"]) == ["Robots in the Garden"]
    assert at.selectbox(key="audit_book").value == "garden-robots"


def test_tuning_provenance_and_history_mark_another_books(tmp_path):
    settings_file = tmp_path / "settings.toml"
    settings_file.write_text(
        '[embedders.local]\nthreshold = 0.4\n'
        '[[history]]\ndate = "2026-01-01"\nembedder = "local"\nthreshold = 0.3\nbook = "x/a"\n'
        f'[[history]]\ndate = "2026-01-02"\nembedder = "local"\nthreshold = 0.4\n'
        f'book = "{SAMPLE_BOOK}"\n')
    data = tomllib.loads(settings_file.read_text())
    own = load_settings(settings_file=settings_file, env={}, book_dir=SAMPLE_BOOK)
    assert threshold_provenance(own) == f"[embedders.local] in {settings_file.name}"
    other = load_settings(settings_file=settings_file, env={"RAG_BOOK": str(tmp_path)})
    assert threshold_provenance(other).endswith(f" · tuned on another book ({SAMPLE_BOOK})")
    assert history_books(data, own) == [str(SAMPLE_BOOK), "x/a (another book)"]
    frame = pd.DataFrame({"date": ["2026-01-02", "2026-01-01"], "threshold": [0.4, 0.3]})
    marked = with_books(frame, data, other)
    assert list(marked.columns) == ["date", "book", "threshold"]
    assert list(marked["book"]) == [f"{SAMPLE_BOOK} (another book)", "x/a (another book)"]


SMALL_SET = """questions:
  - question: "What does an incremental encoder output?"
    expected_sections: ["proprioceptive-sensing#incremental-vs-absolute"]
  - question: "Who won the football World Cup in 1998?"
    in_scope: false
"""


def test_the_tuning_page_replays_this_books_questions_and_marks_anothers_tuning(
        sample_settings, sample_index, monkeypatch, tmp_path):
    """Replay defaults to this book (another book's pools are not re-ranked as this book's),
    and a threshold whose [[history]] names another book says so beside its source."""
    settings = tmp_path / "settings.toml"
    shipped = (SAMPLE_BOOK.parent / "settings.toml").read_text(encoding="utf-8")
    assert 'book = "data/book"' in shipped
    settings.write_text(shipped.replace('book = "data/book"', 'book = "books/garden"'))
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "small.yaml").write_text(SMALL_SET, encoding="utf-8")
    db = tmp_path / "audit.duckdb"
    with AuditStore(db) as store:
        for i in range(3):
            store.record(of_book(*OTHER, f"What is ROS 2, take {i}?", seed=i))
    at = open_app(monkeypatch, sample_settings.index_dir, db, RAG_SETTINGS=str(settings),
                  RAG_EVAL_DIR=str(tmp_path / "eval"))
    ask(at, "What does an incremental encoder output?")
    at.switch_page("pages/tuning.py").run()
    next(b for b in at.button if b.key == "tuning_run").click().run()
    assert not at.exception, at.exception
    active = next(m.value for m in at.markdown if m.value.startswith("Active: dense"))
    assert "· tuned on another book (books/garden))" in active
    history = next(d.value for d in at.dataframe if "previous_threshold" in d.value.columns)
    assert list(history["book"]) == ["books/garden (another book)"]
    assert at.selectbox(key="tuning_replay_book").value == "book"
    assert {m.label: m.value for m in at.metric}["Replayed"] == "1"
    at.selectbox(key="tuning_replay_book").set_value("*").run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Replayed"] == "4"
