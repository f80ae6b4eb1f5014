"""A book kept as a Word document, an EPUB or a built HTML site is indexed and answers a question
with a citation into the right section (real MiniLM, real local Qdrant; the fixtures are built in
code by tests/builders.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.answer.pipeline import Pipeline
from rag.book.parse import book_id_for, parse_book
from rag.config import load_settings
from rag.index.build import open_index, sync_index
from tests.builders import HANDBOOK_TITLE, handbook_docx, handbook_epub, handbook_site

QUESTION = "What pressure does a 28 mm road tyre want?"


def write_book(root: Path, kind: str) -> Path:
    root.mkdir(parents=True)
    if kind == "docx":
        (root / "handbook.docx").write_bytes(handbook_docx())
    elif kind == "epub":
        (root / "handbook.epub").write_bytes(handbook_epub())
    else:
        for path, html in handbook_site():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(html)
    return root


@pytest.mark.parametrize("kind", ["docx", "epub", "site"])
def test_a_document_book_answers_with_a_citation(kind, tmp_path, index_dir, store,
                                                 embedder) -> None:
    book_dir = write_book(tmp_path / f"{kind}-book", kind)
    book = parse_book(book_dir)
    assert book.title == HANDBOOK_TITLE
    pressure = [s for s in book.sections if s.section_id == "pressure"]
    assert len(pressure) == 1 and "80 psi" in pressure[0].text
    assert not book.report.skipped_files or kind == "site"  # the site's 404 and search pages
    sync_index(book_dir, index_dir, embedder, store)
    settings = load_settings(env={}, book_dir=book_dir, index_dir=index_dir,
                             audit_db=tmp_path / "audit.duckdb")
    index = open_index(book_id_for(book_dir), index_dir, embedder, store)
    response = Pipeline(index, settings).answer(QUESTION)
    assert response.status in ("success", "partial"), response.error_message
    assert "80 psi" in response.answer
    assert any(c.section_id == "pressure" for c in response.citations)
