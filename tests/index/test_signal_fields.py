"""Frontmatter `authority` and `last_updated` reach the chunks, survive the index, and become the
composite signals retrieval blends; values that are not usable are ignored with a note."""

from __future__ import annotations

from pathlib import Path

from rag.book.parse import parse_book
from rag.index.build import open_index, sync_index
from rag.retrieval.hybrid import collect_candidates


def set_frontmatter(path: Path, extra: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    path.write_text("---\n" + extra + text[4:], encoding="utf-8")


def test_authority_and_recency_flow_from_frontmatter_to_retrieval(book, index_dir, store,
                                                                  embedder) -> None:
    chapters = sorted((book / "sensing").glob("*.md"))
    assert len(chapters) >= 3
    set_frontmatter(chapters[0], "authority: 0.9\nlast_updated: 2026-01-15\n")
    set_frontmatter(chapters[1], "authority: 0.3\nlast_updated: 2024-01-15\n")
    set_frontmatter(chapters[2], "authority: high\nlast_updated: someday\n")
    summary = sync_index(book, index_dir, embedder, store)
    assert any("authority 'high' is not a number from 0 to 1; ignored" in n
               for n in summary.notes)
    assert any("last_updated 'someday' is not a date" in n for n in summary.notes)
    parsed = parse_book(book)
    index = open_index(parsed.book_id, index_dir, embedder, store)
    by_file = {c.source_path: c for c in index.chunks}
    first = by_file[chapters[0].relative_to(book).as_posix()]
    assert (first.authority, first.last_updated) == (0.9, "2026-01-15")
    third = by_file[chapters[2].relative_to(book).as_posix()]
    assert (third.authority, third.last_updated) == (None, None)
    pool = collect_candidates(index, "How do encoders and IMUs measure a joint?", 50)
    for chunk, authority, recency in zip(pool.chunks, pool.signal("authority"),
                                         pool.signal("recency"), strict=True):
        if chunk.source_path == first.source_path:
            assert (authority, recency) == (0.9, 1.0)  # the newest chapter
        elif chunk.source_path == chapters[1].relative_to(book).as_posix():
            assert authority == 0.3 and recency == 0.0  # the oldest
        else:
            assert (authority, recency) == (0.0, 0.0)
