"""The books Folio knows (rag.config.library): the settings' book, uploads, folders added by path;
a book named by its folder or its id."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.config.library import REGISTRY, add_folder, known_books, resolve_book
from rag.errors import ConfigError, InputError


def book(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "intro.md").write_text("# Intro\n\nA sentence about gears.\n", encoding="utf-8")
    return folder


def test_a_folder_added_by_path_is_known_by_its_id_and_kept_across_reads(tmp_path):
    first, library = book(tmp_path / "first"), tmp_path / "library"
    added = add_folder(book(tmp_path / "elsewhere" / "garden"), library)
    assert (added.book_id, added.origin) == ("garden", "added")
    assert not list(library.glob("*.tmp"))  # written whole, then renamed into place
    assert [(e.book_id, e.origin) for e in known_books(first, library)] == [
        ("first", "settings"), ("garden", "added")]
    assert resolve_book("garden", first, library) == added.path
    assert add_folder(added.path, library) == added  # twice: still one entry
    assert (library / REGISTRY).read_text(encoding="utf-8").count("path =") == 1


def test_what_is_no_book_or_clashes_is_refused_with_a_reason(tmp_path):
    first, library = book(tmp_path / "first"), tmp_path / "library"
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError):
        add_folder(tmp_path / "empty", library)
    add_folder(book(tmp_path / "a" / "garden"), library)
    with pytest.raises(ConfigError, match="Another book is already named 'garden'"):
        add_folder(book(tmp_path / "b" / "garden"), library)
    with pytest.raises(ConfigError, match="known books: first, garden"):
        resolve_book("nowhere", first, library)
