"""Fixtures of the index tests: one module of the sample book, a fresh index folder and store."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rag.index.vectors import VectorStore, open_store
from tests.builders import SAMPLE_BOOK


@pytest.fixture
def book(tmp_path: Path) -> Path:
    root = tmp_path / "mini-book"
    shutil.copytree(SAMPLE_BOOK / "sensing", root / "sensing")
    return root


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def store(index_dir: Path) -> Iterator[VectorStore]:
    opened = open_store(index_dir)
    yield opened
    opened.close()
