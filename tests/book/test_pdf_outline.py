"""A PDF's bookmarks are read one at a time up to a limit, never the whole outline first: a file
with 200,000 of them took 42 s and 1.34 GB before the cap applied (issue 43, item 12). The PDFs
are written in code (tests.builders.pdf_with_bookmarks)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from pypdf import PdfReader

from rag.book import pdf, pdf_sections
from tests.builders import pdf_with_bookmarks

BOOKMARKS, LIMIT = 3_000, 300


@pytest.mark.parametrize("nested", [False, True])
def test_the_outline_is_read_up_to_its_limit_and_no_further(nested: bool) -> None:
    reader = PdfReader(io.BytesIO(pdf_with_bookmarks(BOOKMARKS, nested=nested)))
    entries, complete = pdf_sections.outline_entries(reader, limit=LIMIT)
    assert not complete and len(entries) == LIMIT
    assert [e[0] for e in entries] == [f"Section {i}" for i in range(LIMIT)]  # outline order
    assert [e[1] for e in entries] == [i % 2 if nested else 0 for i in range(LIMIT)]
    assert {e[2] for e in entries} == {1} and entries[1][3] == 719.0  # page, /XYZ top
    # bounded: pypdf parsed the bookmarks walked (and the catalog, pages, outline root), not all
    # 3,000 as reader.outline does
    assert len(reader.resolved_objects) <= LIMIT + 10, len(reader.resolved_objects)
    assert len(PdfReader(io.BytesIO(pdf_with_bookmarks(BOOKMARKS))).outline) == BOOKMARKS


def test_an_outline_within_the_limit_is_read_whole() -> None:
    reader = PdfReader(io.BytesIO(pdf_with_bookmarks(LIMIT, nested=True)))
    entries, complete = pdf_sections.outline_entries(reader, limit=LIMIT)
    assert complete and len(entries) == LIMIT


def test_a_pdf_over_the_bookmark_limit_is_read_with_a_reason(monkeypatch) -> None:
    monkeypatch.setattr(pdf_sections, "MAX_OUTLINE_ENTRIES", 50)
    chapter = pdf.read_pdf(pdf_with_bookmarks(2_000), Path("walking/balance.pdf"), "walking",
                           "balance")
    assert chapter.from_outline and len(chapter.sections) == 50
    assert chapter.sections[0].heading_path[-1] == "Section 0"
    [(where, reason)] = chapter.problems
    assert where == "bookmarks after the first 50"
    assert reason.startswith("not read: Folio reads the first 50 bookmarks of a PDF")


def test_a_bookmark_linked_back_to_an_earlier_one_ends_the_walk() -> None:
    """A /Next that points back at the first bookmark (a cycle) is read once, not forever."""
    raw = pdf_with_bookmarks(5).replace(b"/Prev 9 0 R >>", b"/Prev 9 0 R /Next 6 0 R >>")
    reader = PdfReader(io.BytesIO(raw))
    entries, complete = pdf_sections.outline_entries(reader, limit=LIMIT)
    assert complete and [e[0] for e in entries] == [f"Section {i}" for i in range(5)]
