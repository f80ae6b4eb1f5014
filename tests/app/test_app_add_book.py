"""Adding a book from the sidebar (AppTest, the real library and indexer): a folder named in the
panel is added and opened, and the panel's fields start empty again for the next book."""

from __future__ import annotations

import shutil

import pytest

from tests.builders import SAMPLE_BOOK, open_app

pytestmark = pytest.mark.slow


def test_an_added_folder_opens_and_the_fields_start_empty(sample_settings, sample_index,
                                                          monkeypatch, tmp_path):
    book = tmp_path / "garden-robots"
    shutil.copytree(SAMPLE_BOOK / "sensing", book / "sensing")
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb",
                  RAG_LIBRARY=str(tmp_path / "library"))
    assert not at.exception, at.exception
    at.text_input(key="library_folder_0").input(str(book)).run()
    next(b for b in at.button if b.label == "Add folder").click().run()
    assert not at.exception, at.exception
    assert at.session_state["_folio_books_added"] == 1
    assert at.text_input(key="library_folder_1").value == ""  # a new, empty field
    assert not [t for t in at.text_input if t.key == "library_folder_0"]
    assert at.session_state["folio_book"] != "book"  # the added book is the open one
    assert any(m.value.startswith("Index ready: ") for m in at.success)  # indexed on opening
