"""A book folder -> sections with stable IDs, in the book's own order, and a report of what was
read, skipped and not interpreted.

Markdown (.md, .mdx, .markdown) is read by markdown-it (rag.book.markdown) in the dialect of the
renderer that publishes the book (rag.book.structure); PDFs by rag.book.pdf; DOCX, EPUB and a
folder of HTML pages are turned into Markdown first (rag.book.formats). A file that cannot be read
is skipped with its reason; the rest of the book still loads.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from rag.book.chapters import chapter_sections, chapter_title, safe_id
from rag.book.documents import convert_documents
from rag.book.frontmatter import chapter_signals, load_frontmatter
from rag.book.listing import DOCUMENTS, EXTENSIONS, MARKDOWN, list_book_files, read_book_file
from rag.book.markdown.dialects import Rewriter
from rag.book.markdown.includes import IncludeBudget, Includes
from rag.book.markdown.reader import read_markdown
from rag.book.order import book_order, d2l_labels
from rag.book.pdf import PDF_READER_VERSION, read_pdf
from rag.book.structure import Layout, chapters_root, project_of, read_layout
from rag.errors import InputError
from rag.types import Section

__all__ = ["EXTENSIONS", "Book", "BookReport", "parse_book", "book_id_for", "resolve_book_root"]
# part of the content hash: a new reader re-indexes, only the chunks whose text changed re-embed
# (2: an unclosed HTML comment hides the rest; 3: a chunk keeps its table rows and list items on
# their own lines, rag.book.chunk)
READER_VERSION = b"markdown-it 3"


@dataclass
class BookReport:
    """What an author needs to fix, next to what was read."""

    files: int = 0
    sections: int = 0
    unstable_ids: int = 0  # sections whose id the renderer derives from the heading
    unstable_files: list[str] = field(default_factory=list)
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # frontmatter values that were ignored
    renderer: str = ""  # whose heading ids the derived ones follow
    missed: dict[str, dict[str, int]] = field(default_factory=dict)  # file -> kind -> count


@dataclass
class Book:
    root: Path
    book_id: str
    sections: list[Section]
    chapters: dict[str, dict]  # "module/chapter" -> {title, path, page, position, ...}
    report: BookReport
    content_hash: str
    title: str = ""
    renderer: str = ""


@dataclass
class _Chapter:
    rel: Path
    meta: dict
    sections: list[Section]


def resolve_book_root(root: Path) -> Path:
    """Where a book's chapters are: its docs/ (Docusaurus, MkDocs), book.toml's src (mdBook),
    mkdocs.yml's docs_dir, else the folder itself."""
    return chapters_root(project_of(Path(root)))


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from e


def read_meta(raw: bytes) -> tuple[dict, str]:
    """Frontmatter and the body, with the frontmatter's lines left blank in the body so that
    line numbers in reports are the file's."""
    from frontmatter import YAMLHandler

    text = _decode(raw)
    if "\x00" in text:
        raise InputError("contains NUL bytes")
    handler = YAMLHandler()
    stripped = text.lstrip()
    if not handler.detect(stripped):
        return {}, text
    try:
        front, body = handler.split(stripped)
    except ValueError:  # an opening --- without a closing one: no frontmatter, as Docusaurus
        return {}, text
    offset = text.count("\n", 0, len(text) - len(stripped)) + 1  # yaml counts from the ---
    meta = load_frontmatter(front, offset)
    return meta, "\n" * text.count("\n", 0, len(text) - len(body)) + body


def chapter_ids(rel: Path, meta: dict) -> tuple[str, str]:
    """module_id (frontmatter, else top folder) and chapter_id (frontmatter id, else file stem).

    Docusaurus ids are folder-relative, so a file in a subfolder of its module keeps that
    subfolder: module/intro.md and module/assessments/intro.md are two chapters, and the URL
    built from the ids is the site's own. A frontmatter id a URL cannot carry is not used."""
    own = safe_id(meta.get("id"))
    if safe_id(meta.get("module_id")):
        return str(meta["module_id"]).strip(), own or rel.stem
    module_id = rel.parts[0] if len(rel.parts) > 1 else ""
    stem = (legacy_slug(rel.stem) or "document") if rel.suffix.lower() in DOCUMENTS else rel.stem
    return module_id, "/".join([*rel.parts[1:-1], own or stem])


def parse_book(root: Path, renderer: str = "") -> Book:
    """Read every chapter in the book's order; a bad file is skipped and reported."""
    given = Path(root)
    root, files, skipped, layout = _listing(given, renderer)
    report = BookReport(skipped_files=list(skipped), renderer=layout.renderer)
    digest = hashlib.sha256(READER_VERSION)
    bodies: list[tuple[Path, dict, str]] = []
    documents: list[tuple[Path, bytes]] = []
    for path in files:
        rel = path.relative_to(root)
        try:
            raw = read_book_file(path, root)
            digest.update(rel.as_posix().encode() + b"\0" + raw + b"\0")
            if rel.suffix.lower() in MARKDOWN:
                bodies.append((rel, *read_meta(raw)))
            else:
                documents.append((rel, raw))
        except InputError as e:
            report.skipped_files.append({"path": rel.as_posix(), "reason": str(e)})
    digest.update(PDF_READER_VERSION)
    labels = d2l_labels(body for _, _, body in bodies)
    budget = IncludeBudget()
    chapters = [_markdown_chapter(rel, meta, body, layout, labels, budget, report)
                for rel, meta, body in bodies]
    titles: list[str] = []
    chapters += [_Chapter(rel, meta, found) for rel, meta, found in
                 _documents(documents, layout, report, titles)]
    book = _assemble(given, root, layout, chapters, report, digest.hexdigest())
    listed = {f.relative_to(root).as_posix() for f in files}
    report.files = len(listed - {f["path"] for f in report.skipped_files})
    if not book.title and len(titles) == 1:  # one DOCX, EPUB or site: the book it is
        book.title = titles[0]
    return book


def _listing(given: Path, renderer: str) -> tuple[Path, list[Path], list[dict[str, str]], Layout]:
    root = resolve_book_root(given)
    files, skipped = list_book_files(root)
    layout = read_layout(given, files, renderer)
    if layout.renderer == "mdbook":  # SUMMARY.md is mdBook's table of contents, not a page
        files = [f for f in files if f != root / "SUMMARY.md"]
    return root, files, skipped, layout


def content_hash(root: Path, renderer: str = "") -> str:
    """parse_book(root).content_hash without parsing (the same bytes, hashed the same way): what
    an index's freshness is checked with before a big book is read again (d2l: 0.3 s, not 15)."""
    root, files, _, _ = _listing(Path(root), renderer)
    digest = hashlib.sha256(READER_VERSION)
    for path in files:
        try:
            raw = read_book_file(path, root)
        except InputError:
            continue
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + raw + b"\0")
    digest.update(PDF_READER_VERSION)
    return digest.hexdigest()


def _markdown_chapter(rel: Path, meta: dict, body: str, layout: Layout, labels: dict[str, str],
                      budget: IncludeBudget, report: BookReport) -> _Chapter:
    includes = Includes((layout.root / rel).parent, (layout.root, layout.project),
                        layout.project, budget)
    rewriter = Rewriter(includes, labels, mdx=rel.suffix.lower() == ".mdx", myst=layout.myst)
    read = read_markdown(body, rewriter)
    if read.missed:
        report.missed[rel.as_posix()] = dict(sorted(read.missed.items()))
    return _Chapter(rel, meta, _sections(read.parts, rel, meta, layout, report))


def _sections(parts: list, rel: Path, meta: dict, layout: Layout, report: BookReport
              ) -> list[Section]:
    signals, problems = chapter_signals(meta)
    report.notes.extend(f"{rel.as_posix()}: {problem}" for problem in problems)
    for key in ("id", "module_id"):
        if meta.get(key) is not None and not safe_id(meta[key]):
            report.notes.append(f"{rel.as_posix()}: frontmatter {key} {str(meta[key])[:80]!r} "
                                "cannot be part of a link (use letters, digits, '-', '_', "
                                "'.'); the file's name was used")
    module_id, chapter_id = chapter_ids(rel, meta)
    title = chapter_title(parts, meta, layout.toc_title(rel.as_posix()), rel)
    return chapter_sections(parts, title, rel, module_id, chapter_id, meta, signals,
                            layout.slug_style, report.duplicates)


def _documents(documents: list[tuple[Path, bytes]], layout: Layout, report: BookReport,
               titles: list[str]) -> Iterator[tuple[Path, dict, list[Section]]]:
    """(rel, meta, sections) of each PDF, and of each chapter of a DOCX, EPUB or HTML site."""
    for rel, raw in documents:
        if rel.suffix.lower() == ".pdf":
            module_id, chapter_id = chapter_ids(rel, {})
            try:
                read = read_pdf(raw, rel, module_id, chapter_id)
            except InputError as e:
                report.skipped_files.append({"path": rel.as_posix(), "reason": str(e)})
                continue
            report.skipped_files.extend({"path": f"{rel.as_posix()} {pages}", "reason": why}
                                        for pages, why in read.problems)
            yield rel, {}, list(read.sections)
    converted = [(rel, raw) for rel, raw in documents if rel.suffix.lower() != ".pdf"]
    nowhere = Includes(layout.root, (), layout.root, IncludeBudget(0))  # a document includes none
    for chapter in convert_documents(converted, report.skipped_files, titles):
        read = read_markdown(chapter.markdown, Rewriter(nowhere, {}, mdx=False, myst=False))
        missed = Counter(chapter.missed) + read.missed
        if missed:
            report.missed[chapter.source] = dict(sorted(
                (Counter(report.missed.get(chapter.source, {})) + missed).items()))
        yield chapter.rel, chapter.meta, _sections(read.parts, chapter.rel, chapter.meta,
                                                   layout, report)


def _assemble(given: Path, root: Path, layout: Layout, chapters: list[_Chapter],
              report: BookReport, content_hash: str) -> Book:
    """Chapters in the book's order, duplicates of a chapter id skipped, and the report."""
    sections: list[Section] = []
    index: dict[str, dict] = {}
    for position, chapter in enumerate(book_order(chapters, layout, root)):
        found, rel = chapter.sections, chapter.rel
        if not found:
            continue
        key = f"{found[0].module_id}/{found[0].chapter_id}"
        if key in index:
            reason = (f"chapter id '{found[0].chapter_id}' in module '{found[0].module_id}' is "
                      f"already used by {index[key]['path']}")
            report.duplicates.append(f"{rel.as_posix()}: {reason}; this file was skipped")
            report.skipped_files.append({"path": rel.as_posix(), "reason": reason})
            continue
        index[key] = {"title": found[0].chapter_title, "path": rel.as_posix(),
                      "page": chapter.meta.get("page"), "position": position,
                      "module_id": found[0].module_id, "chapter_id": found[0].chapter_id,
                      "description": str(chapter.meta.get("description", ""))[:2000]}
        sections.extend(found)
        if any(not s.stable for s in found):
            report.unstable_files.append(rel.as_posix())
    report.sections = len(sections)
    report.unstable_ids = sum(not s.stable for s in sections)
    return Book(root=root, book_id=book_id_for(given), sections=sections, chapters=index,
                report=report, content_hash=content_hash, title=layout.title,
                renderer=layout.renderer)


def legacy_slug(text: str) -> str:
    """The slug book ids and PDF chapter ids have always had (kept so existing indexes and
    audit rows keep their book)."""
    text = re.sub(r"[`*_~]|<[^>]{1,200}>", "", text.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def book_id_for(root: Path) -> str:
    """The folder name, or its parent's for a bare docs/ folder."""
    path = Path(root).resolve()
    name = path.parent.name if path.name == "docs" else path.name
    return legacy_slug(name) or "book"
