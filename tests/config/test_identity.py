"""The book's id and title come from the book unless settings.toml names it, and a tuned value
knows which book it was tuned on (rag.config.identity, Settings.book_id / tuned_elsewhere)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag.config import PROJECT_ROOT, load_settings
from rag.config.identity import frontmatter_title, is_book, title_of_book, tuned_book
from tests.builders import SAMPLE_BOOK, shared_path

SHIPPED = PROJECT_ROOT / "data" / "settings.toml"
HISTORY = ('[embedders.local]\nthreshold = 0.33\ngate_caveat = 0.3\n'
           '[[history]]\ndate = "2026-11-21"\nembedder = "local"\nthreshold = 0.33\n'
           'book = "data/book"\n')


def chapter(path: Path, front: str, body: str = "# Heading\n\nText.\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}", encoding="utf-8")
    return path


def test_a_book_title_in_the_root_pages_frontmatter_names_the_book(tmp_path):
    book = tmp_path / "garden-robots"
    chapter(book / "index.md", "title: Welcome\nbook_title: 'Robots in the Garden'")
    chapter(book / "pruning" / "intro.md", "title: Pruning")
    assert title_of_book(book) == "Robots in the Garden"
    settings = load_settings(settings_file=SHIPPED, env={"RAG_BOOK": str(book)})
    assert settings.resolved_title == "Robots in the Garden"
    assert settings.book_id == "garden-robots"


def test_frontmatter_comes_before_the_docusaurus_config(tmp_path):
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    (site / "docusaurus.config.js").write_text("module.exports = {\n  title: 'From Config',\n};\n")
    assert title_of_book(site / "docs") == "From Config"
    chapter(site / "docs" / "intro.mdx", "book_title: From Frontmatter")
    assert title_of_book(site / "docs") == title_of_book(site) == "From Frontmatter"


@pytest.mark.parametrize("front", [
    "title: Introduction to Everything",  # a chapter's title names the chapter, not the book
    "book_title: [not, one, value]",
    "book_title: &a x\nother: *a",  # refused like any chapter's anchors
    "book_title: 'unclosed",
])
def test_only_a_readable_book_title_counts_else_the_folder_name(tmp_path, front):
    book = tmp_path / "my_field-notes"
    chapter(book / "intro.md", front)
    assert frontmatter_title(book) == ""
    assert title_of_book(book) == "My Field Notes"


def test_a_root_page_linked_from_outside_the_book_is_not_read(tmp_path):
    outside = chapter(tmp_path / "elsewhere" / "index.md", "book_title: Not This Book")
    book = tmp_path / "linked"
    book.mkdir()
    os.symlink(outside, book / "index.md")
    assert title_of_book(book) == "Linked"


def test_the_two_real_books_are_named_as_their_readers_know_them():
    assert load_settings(settings_file=SHIPPED, env={}).resolved_title == \
        "Foundations of Physical AI"  # [book] title of the settings file's own book
    physical = shared_path("physical-ai-book")
    other = load_settings(settings_file=SHIPPED, env={"RAG_BOOK": str(physical)})
    # its intro/index.md is titled "Introduction to ...": a chapter, so the folder names it
    assert (other.book_id, other.resolved_title) == ("physical-ai-book", "Physical Ai Book")
    assert load_settings(settings_file=SHIPPED, env={"RAG_BOOK": str(physical / "docs")}
                         ).book_id == "physical-ai-book"


def test_the_snapshot_names_the_book(tmp_path):
    snapshot = load_settings(settings_file=SHIPPED, env={}, book_dir=SAMPLE_BOOK).snapshot()
    assert (snapshot["book_id"], snapshot["book_title"]) == ("book",
                                                            "Foundations of Physical AI")


def test_a_tuned_value_knows_its_book_and_says_when_it_is_another(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text(HISTORY, encoding="utf-8")
    own = load_settings(settings_file=path, env={}, book_dir=SAMPLE_BOOK)
    assert own.threshold_book == "data/book" and own.tuned_elsewhere("threshold") == ""
    other = load_settings(settings_file=path, env={"RAG_BOOK": str(tmp_path)})
    assert other.tuned_elsewhere("threshold") == "data/book"
    assert other.tuned_elsewhere("gate") == ""  # no [[history]] entry set the gate
    explicit = load_settings(settings_file=path, env={"RAG_BOOK": str(tmp_path),
                                                      "RAG_THRESHOLD": "0.5"})
    assert explicit.tuned_elsewhere("threshold") == ""  # set by hand, for this run


def test_a_value_changed_by_hand_after_tuning_has_no_known_book():
    data = {"embedders": {"local": {"threshold": 0.4}},
            "history": [{"embedder": "local", "threshold": 0.33, "book": "data/book"}]}
    assert tuned_book(data, "local", "threshold") == ""
    data["embedders"]["local"]["threshold"] = 0.33
    assert tuned_book(data, "local", "threshold") == "data/book"
    assert tuned_book(data, "cohere", "threshold") == ""
    newer = {"embedder": "local", "threshold": 0.33, "book": "/abs/other-book"}
    assert tuned_book({**data, "history": [*data["history"], newer]}, "local",
                      "threshold") == "/abs/other-book"


def test_a_gate_tuned_on_another_book_is_known_too(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text(HISTORY + '[[history]]\ndate = "2026-11-22"\nembedder = "local"\n'
                    'gate_caveat = 0.3\nbook = "../shared/data/physical-ai-book"\n',
                    encoding="utf-8")
    sample = load_settings(settings_file=path, env={}, book_dir=SAMPLE_BOOK)
    assert sample.tuned_elsewhere("gate") == "../shared/data/physical-ai-book"
    assert sample.tuned_elsewhere("threshold") == ""
    physical = load_settings(settings_file=path, env={},
                             book_dir=PROJECT_ROOT / ".." / "shared" / "data" / "physical-ai-book")
    assert physical.tuned_elsewhere("gate") == ""  # recorded relative to the project: the same
    site = tmp_path / "site"
    (site / "docs").mkdir(parents=True)
    assert is_book(str(site / "docs"), site, PROJECT_ROOT)  # a site and its docs/ are one book
    assert not is_book(str(site), SAMPLE_BOOK, PROJECT_ROOT)
