"""DOCX, EPUB and a folder of HTML pages, read as Markdown chapters by rag.book.formats."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

from rag.errors import InputError

PAGES = (".html", ".htm")


def convert_documents(documents: list[tuple[Path, bytes]], skipped: list[dict[str, str]]
                      ) -> Iterator[tuple[Path, dict, str, list[str]]]:
    """(rel, meta, Markdown, problems) per chapter: a DOCX or EPUB may hold many, each HTML page
    is one. A file that cannot be read is added to `skipped` with why."""
    if not documents:
        return
    try:  # optional: its libraries may be missing from an older environment
        formats = importlib.import_module("rag.book.formats")
    except ImportError:
        skipped.extend({"path": rel.as_posix(), "reason": "reading DOCX, EPUB and HTML needs "
                        "the packages in requirements.txt (pip install -r requirements.txt)"}
                       for rel, _ in documents)
        return
    pages = [(rel, raw) for rel, raw in documents if rel.suffix.lower() in PAGES]
    for rel, raw in documents:
        if rel.suffix.lower() in PAGES:
            continue
        reader = formats.read_docx if rel.suffix.lower() == ".docx" else formats.read_epub
        try:
            book = reader(raw, rel.name)
        except InputError as e:
            skipped.append({"path": rel.as_posix(), "reason": str(e)})
            continue
        many = len(book.chapters) > 1
        for chapter in book.chapters:
            path = rel.with_suffix("") / chapter.path if many else rel
            yield (path.with_suffix(".md") if many else rel,
                   {"title": chapter.title} if chapter.title else {}, chapter.markdown,
                   list(book.problems))
    if pages:
        try:
            site = formats.read_html_site([(rel.as_posix(), raw) for rel, raw in pages])
        except InputError as e:
            skipped.append({"path": f"{len(pages)} .html page(s)", "reason": str(e)})
            return
        for chapter in site.chapters:
            yield (Path(chapter.path).with_suffix(".md"),
                   {"title": chapter.title} if chapter.title else {}, chapter.markdown,
                   list(site.problems))
