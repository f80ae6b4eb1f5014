"""An index folder that cannot be written (issue 43, low: it was told to delete and rebuild):
a built index is searched from a read-only copy; building or updating one says the folder cannot
be written and what to do, and never advises deleting it.

The folder is made read-only the way this machine allows: `chattr +i` as root (whom permission
bits do not stop), `chmod a-w` otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from rag.config import load_settings
from rag.errors import BookIndexError
from rag.index.build import sync_index
from rag.index.load import build_index, load_index
from rag.index.vectors import open_store
from tests.builders import PROJECT_ROOT

CANNOT_WRITE = "cannot be written"
ADVICE = "choose a folder you can write with --index DIR (or RAG_INDEX_DIR)"


@contextmanager
def read_only(folder: Path) -> Iterator[None]:
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(
                ["chattr", "-R", "+i", str(folder)], capture_output=True).returncode:
            pytest.skip("root ignores permission bits and chattr +i is not allowed here")
        undo = ["chattr", "-R", "-i", str(folder)]
    else:
        subprocess.run(["chmod", "-R", "a-w", str(folder)], check=True)
        undo = ["chmod", "-R", "u+w", str(folder)]
    try:
        yield
    finally:
        subprocess.run(undo, check=True)


@pytest.fixture
def built(book, index_dir, embedder) -> Path:
    store = open_store(index_dir)
    sync_index(book, index_dir, embedder, store)
    store.close()
    return index_dir


def test_a_built_index_in_a_read_only_folder_is_searched(book, built, caplog) -> None:
    settings = load_settings(env={}, book_dir=book, index_dir=built)
    with read_only(built):
        index, summary = load_index(settings)
        try:
            assert summary is None and index.store.copy_of  # fresh, read from a copy
            assert "is read-only: searching a read-only copy" in caplog.text
            assert index.store.search(index.collection,
                                      index.embedder.embed_query("lidar in sunlight"), 3)
            with pytest.raises(BookIndexError) as error:
                build_index(settings)  # `rag ingest`: asked to write, it says why it cannot
            assert CANNOT_WRITE in str(error.value) and ADVICE in str(error.value)
            assert "remove the folder" not in str(error.value)
        finally:
            index.store.close()


def test_a_stale_index_in_a_read_only_folder_says_what_to_do(book, built) -> None:
    chapter = book / "sensing" / "exteroception.md"
    chapter.write_text(chapter.read_text() + "\n\nA new closing sentence about sensors.\n")
    with read_only(built), pytest.raises(BookIndexError) as error:
        load_index(load_settings(env={}, book_dir=book, index_dir=built))
    assert str(error.value).startswith(f"The index folder {built} cannot be written (")
    assert ADVICE in str(error.value) and "remove the folder" not in str(error.value)


def test_rag_ingest_into_a_read_only_folder_exits_with_the_message(book, built) -> None:
    with read_only(built):
        result = subprocess.run([sys.executable, "-m", "rag", "ingest", "--book", str(book),
                                 "--index", str(built)], cwd=PROJECT_ROOT, capture_output=True,
                                text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert CANNOT_WRITE in result.stderr and ADVICE in result.stderr
    assert "remove the folder" not in result.stderr
