"""The in-app book reader's data: the book's sections per chapter, parsed once per book hash."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rag.book.parse import parse_book
from rag.types import Section

TARGET_STYLE = ("<style>.st-key-reader_target{background:#fff8e1;border-left:4px solid #f0a500;"
                "padding:0.4rem 0.9rem;border-radius:4px}</style>")


def book_key(book_dir: Path) -> str:
    """Cheap change key: every book file's path, size and mtime."""
    files = sorted(Path(book_dir).rglob("*.md*"))
    return "|".join(f"{p}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)


@st.cache_data(show_spinner="Reading the book…", max_entries=4)
def chapters(book_dir: str, key: str) -> dict[str, dict]:
    """"module/chapter" -> {module_id, chapter_id, title, sections} in book order; `key` is
    book_key(): a book edit re-reads it."""
    book = parse_book(Path(book_dir))
    modules = list(dict.fromkeys(s.module_id for s in book.sections))
    out: dict[str, dict] = {}
    for s in book.sections:
        meta = book.chapters.get(f"{s.module_id}/{s.chapter_id}", {})
        entry = out.setdefault(f"{s.module_id}/{s.chapter_id}", {
            "module_id": s.module_id, "chapter_id": s.chapter_id,
            "title": meta.get("title") or s.chapter_title, "position": meta.get("position") or 0,
            "sections": []})
        entry["sections"].append(s)
    order = sorted(out, key=lambda k: (modules.index(out[k]["module_id"]), out[k]["position"]))
    return {k: out[k] for k in order}


def label(entry: dict) -> str:
    return f"{entry['module_id'].replace('-', ' ').title()} › {entry['title']}"


def show_section(s: Section, target: bool) -> None:
    """Heading with the section ID as its HTML anchor (a #fragment scrolls there), then text."""
    with st.container(key="reader_target" if target else None):
        if s.section_id:  # the element gets id=section_id; Streamlit scrolls to a matching #hash
            st.subheader(s.title.replace("$", "\\$"), anchor=s.section_id)
        if not s.stable:
            st.caption(":material/link_off: no stable ID: links to this section go to the "
                       "chapter")
        st.markdown(s.text.replace("$", "\\$"))
