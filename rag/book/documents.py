"""DOCX, EPUB and a folder of HTML pages (a built site), read as Markdown chapters by
rag.book.formats and handed to the Markdown reader like any chapter file."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from rag.errors import InputError

PAGES = (".html", ".htm", ".xhtml")
PROBLEM_RE = re.compile(r"^(.{1,300}?): (\d{1,9})(?: \(in [^\n]{0,2000}\))?$")


@dataclass(frozen=True)
class DocumentChapter:
    rel: Path  # a path-like name for the chapter: its ids are made from it
    source: str  # the file it came from, as the report names it
    meta: dict  # {"title": ...} when the document names the chapter
    markdown: str
    missed: dict[str, int]  # what the converter did not interpret, by kind


def _counts(problems: list[str]) -> dict[str, int]:
    """The converter's "kind: count (in where)" lines as {kind: count}."""
    out: dict[str, int] = {}
    for line in problems:
        m = PROBLEM_RE.match(line)
        kind, count = (m.group(1), int(m.group(2))) if m else (line[:300], 1)
        out[kind] = out.get(kind, 0) + count
    return out


def convert_documents(documents: list[tuple[Path, bytes]], skipped: list[dict[str, str]],
                      titles: list[str]) -> Iterator[DocumentChapter]:
    """The chapters of each DOCX and EPUB (in its own order) and of the HTML pages (in the
    site's navigation order). A file that cannot be read is added to `skipped` with why; each
    document's own title is appended to `titles`."""
    if not documents:
        return
    try:  # imported only for such books: mammoth and BeautifulSoup take a second or two
        formats = importlib.import_module("rag.book.formats")
    except ImportError:
        skipped.extend({"path": rel.as_posix(), "reason": "reading DOCX, EPUB and HTML needs "
                        "the packages in requirements.txt (pip install -r requirements.txt)"}
                       for rel, _ in documents)
        return
    for rel, raw in documents:
        if rel.suffix.lower() in PAGES:
            continue
        reader = formats.read_docx if rel.suffix.lower() == ".docx" else formats.read_epub
        try:
            book = reader(raw, rel.name)
        except InputError as e:
            skipped.append({"path": rel.as_posix(), "reason": str(e)})
            continue
        titles.append(book.title)
        missed = _counts(book.problems)
        for n, chapter in enumerate(book.chapters):
            name = rel.with_suffix("") / chapter.path if len(book.chapters) > 1 else rel
            yield DocumentChapter(name.with_suffix(".md"), rel.as_posix(),
                                  {"title": chapter.title} if chapter.title else {},
                                  chapter.markdown, missed if n == 0 else {})
    pages = [(rel.as_posix(), raw) for rel, raw in documents if rel.suffix.lower() in PAGES]
    if pages:
        try:
            site = formats.read_html_site(pages)
        except InputError as e:
            skipped.append({"path": f"{len(pages)} .html page(s)", "reason": str(e)})
            return
        titles.append(site.title)
        missed = _counts(site.problems)
        for n, chapter in enumerate(site.chapters):
            yield DocumentChapter(Path(chapter.path).with_suffix(".md"), "(the site's pages)",
                                  {"title": chapter.title} if chapter.title else {},
                                  chapter.markdown, missed if n == 0 else {})
