"""The in-app book reader: the book's sections per chapter, parsed once per book edit, and one
section shown with its links pointed at the reader (Markdown) or its pages (PDF)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import streamlit as st

from pages.components.book.text import (
    link_targets,
    pages_caption,
    pdf_markdown,
    pdf_pages,
    resolve_links,
)
from rag.book.parse import EXTENSIONS, parse_book
from rag.types import Section

TARGET_STYLE = ("<style>.st-key-reader_target{background:#fff8e1;border-left:4px solid #f0a500;"
                "padding:0.4rem 0.9rem;border-radius:4px}</style>")


def book_key(book_dir: Path) -> str:
    """Cheap change key: every book file's path, size and mtime (PDFs too; a dangling symlink
    counts by its name, parse_book reports it)."""
    stamps = []
    for path in sorted(p for p in Path(book_dir).rglob("*") if p.suffix in EXTENSIONS):
        try:
            stat = path.stat()
            stamps.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            stamps.append(f"{path}:missing")
    return "|".join(stamps)


@st.cache_data(show_spinner="Reading the book…", max_entries=4)
def chapters(book_dir: str, key: str) -> dict[str, dict]:
    """"module/chapter" -> {module_id, chapter_id, title, sections} in book order; `key` is
    book_key(): a book edit re-reads it."""
    book = parse_book(Path(book_dir))
    out: dict[str, dict] = {}
    for s in book.sections:
        meta = book.chapters.get(f"{s.module_id}/{s.chapter_id}", {})
        entry = out.setdefault(f"{s.module_id}/{s.chapter_id}", {
            "module_id": s.module_id, "chapter_id": s.chapter_id,
            "title": meta.get("title") or s.chapter_title, "position": meta.get("position") or 0,
            "sections": []})
        entry["sections"].append(s)
    return out  # parse_book gives the sections in the book's own order


def label(entry: dict) -> str:
    return f"{entry['module_id'].replace('-', ' ').title()} › {entry['title']}"


def targets_of(chapters: dict[str, dict]) -> dict[str, tuple]:
    """What the book's own links may name, for resolve_links."""
    return link_targets(s for entry in chapters.values() for s in entry["sections"])


def show_section(s: Section, target: bool, targets: Mapping[str, tuple] | None = None) -> None:
    """Heading with the section ID as its HTML anchor (a #fragment scrolls there), then text:
    a PDF section's per page, a Markdown section's with its links resolved against `targets`."""
    with st.container(key="reader_target" if target else None):
        if s.section_id:  # the element gets id=section_id; Streamlit scrolls to a matching #hash
            st.subheader(s.title.replace("$", "\\$"), anchor=s.section_id)
        if not s.stable:
            st.caption(":material/link: derived ID: computed from the heading as the book's "
                       "site computes it; it changes when the heading is reworded (an explicit "
                       "`{#id}` keeps it)")
        if caption := pages_caption(s):
            st.caption(f":material/description: {caption}")
            for n, (page, text) in enumerate(pdf_pages(s)):
                if n:  # where the printed page turns
                    st.caption(f":material/insert_page_break: page {page}")
                st.markdown(pdf_markdown(text))
            return
        # the section's text is canonical Markdown (rag.book.markdown): a literal "$" is
        # already escaped and math is $...$, so code keeps its own dollars
        st.markdown(resolve_links(s.text, s.source_path, targets or {}))
