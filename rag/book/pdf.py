"""PDF chapters read with pypdf: the text of every page as lines with their font size and height,
sections from the outline (else from font sizes, `pdf_sections`), each with its real pages.

A file is never silently empty: no text layer at all, a password, a damaged file or a page over
a limit is reported with what to do. Limits bound one file's cost; a normal book is far inside
them (a dense page holds about 6,000 characters and 20-100 KB of drawing instructions).
"""

from __future__ import annotations

import hashlib
import io
import logging
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rag.book import pdf_sections
from rag.book.pdf_sections import (
    Line,
    build_sections,
    outline_entries,
    outline_headings,
    size_headings,
)
from rag.errors import InputError
from rag.types import Section

PDF_READER_VERSION = b"pdf-reader 2"  # in the book's content hash: a reader change re-indexes
MAX_PDF_BYTES = 200 * 2**20
MAX_PDF_PAGES = 2_000
MAX_PAGE_CONTENT_BYTES = 2 * 2**20
MAX_PDF_CONTENT_BYTES = 64 * 2**20  # the drawing instructions of all pages together
MAX_PAGE_CHARS = 100_000
CACHE_ENTRIES = 16
OCR_HINT = "run OCR on the file (e.g. `ocrmypdf in.pdf out.pdf`) to include them"
LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl",
                           "ﬅ": "st", "ﬆ": "st", "\u00ad": ""})
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # \x1f too: it marks page turns
PAGE_NUMBER_RE = re.compile(r"(?:page\s*)?\d{1,5}(?:\s*(?:/|of)\s*\d{1,5})?", re.IGNORECASE)


@dataclass(frozen=True)
class PdfChapter:
    title: str
    sections: tuple[Section, ...]
    pages: int
    from_outline: bool  # headings from the PDF's bookmarks, else from font sizes
    problems: tuple[tuple[str, str], ...]  # ("pages 3, 7", reason): pages left out


_CACHE: OrderedDict[tuple, PdfChapter | InputError] = OrderedDict()
_CACHE_LOCK = threading.Lock()  # the app reads the book from several threads


def read_pdf(raw: bytes, rel: Path, module_id: str, chapter_id: str) -> PdfChapter:
    """One PDF as a chapter; InputError when nothing can be read from it. Memoised by content,
    failures too: the app checks the book's freshness often, and a 100-page PDF takes seconds."""
    key = (hashlib.sha256(raw).hexdigest(), rel.as_posix(), module_id, chapter_id)
    with _CACHE_LOCK:
        found = _CACHE.get(key)
        if found is not None:
            _CACHE.move_to_end(key)
    if found is None:
        try:
            found = _read_pdf(raw, rel, module_id, chapter_id)
        except InputError as e:
            found = e
        with _CACHE_LOCK:
            _CACHE[key] = found
            while len(_CACHE) > CACHE_ENTRIES:
                _CACHE.popitem(last=False)
    if isinstance(found, InputError):
        raise InputError(str(found))
    return found


def _read_pdf(raw: bytes, rel: Path, module_id: str, chapter_id: str) -> PdfChapter:
    with _quiet_pypdf():
        reader, count = open_pdf(raw)
        lines, problems = read_lines(reader, count)
    if not lines:
        other = [f"{pages}: {reason}" for pages, reason in problems if OCR_HINT not in reason]
        if other:
            raise InputError("no text could be read from it: " + "; ".join(other))
        raise InputError(f"no text layer on any of its {count} page{'s' * (count != 1)} (a "
                         f"scanned PDF?); {OCR_HINT.replace('them', 'it')}")
    lines = drop_running_lines(lines)
    with _quiet_pypdf():
        entries, complete = outline_entries(reader)
        title = metadata_title(reader)
    headings = outline_headings(entries, lines)
    if not complete:
        cap = pdf_sections.MAX_OUTLINE_ENTRIES
        problems.append((f"bookmarks after the first {cap:,}",
                         f"not read: Folio reads the first {cap:,} bookmarks of a PDF, and the "
                         "text under the others belongs to the section before them; split the "
                         "file to keep them"))
    from_outline = bool(headings)
    if not from_outline:
        headings = size_headings(lines)
    title, sections = build_sections(lines, headings, rel, module_id, chapter_id, title)
    return PdfChapter(title, tuple(sections), count, from_outline, tuple(problems))


@contextmanager
def _quiet_pypdf() -> Iterator[None]:
    """pypdf logs every oddity it repairs ("EOF marker not found"); what matters is reported."""
    logger = logging.getLogger("pypdf")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def open_pdf(raw: bytes):
    """A PdfReader and its page count; InputError for a damaged, locked or oversized file."""
    from pypdf import PdfReader
    from pypdf.errors import DependencyError

    if len(raw) > MAX_PDF_BYTES:
        raise InputError(f"{len(raw) / 2**20:,.0f} MB, over the {MAX_PDF_BYTES // 2**20} MB a "
                         "PDF may have; split it into smaller files")
    locked = ("encrypted with a password; put a copy without the password in the book (e.g. "
              "`qpdf --decrypt --password=PASSWORD in.pdf out.pdf`)")
    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise InputError(locked)
        count = len(reader.pages)
    except InputError:
        raise
    except DependencyError as e:  # AES needs the optional `cryptography` package
        raise InputError(f"encrypted ({e}); put an unencrypted copy in the book") from e
    except Exception as e:  # pypdf raises PdfReadError, but also ValueError, KeyError, ...
        if "decrypt" in str(e).lower() or "password" in str(e).lower():
            raise InputError(locked) from e
        raise InputError(f"not a readable PDF ({type(e).__name__}: {e})") from e
    return reader, count


def read_lines(reader, count: int) -> tuple[list[Line], list[tuple[str, str]]]:
    """Every page's lines, and the pages left out with why (grouped by reason)."""
    lines: list[Line] = []
    left_out: dict[str, list[int]] = {}
    total = 0  # drawing instructions read so far
    for number in range(1, min(count, MAX_PDF_PAGES) + 1):
        try:
            found, reason, size = read_page(reader.pages[number - 1], number, total)
        except Exception as e:  # one damaged page must not lose the others
            found, reason, size = [], f"could not be read ({type(e).__name__}: {e})", 0
        lines.extend(found)
        total += size
        if reason:
            left_out.setdefault(reason, []).append(number)
    if count > MAX_PDF_PAGES:
        left_out.setdefault(f"not read: Folio reads the first {MAX_PDF_PAGES:,} pages of a PDF; "
                            "split the file to include the rest", []).extend(
            range(MAX_PDF_PAGES + 1, count + 1))
    return lines, [(page_list(pages), reason) for reason, pages in left_out.items()]


def read_page(page, number: int, total: int) -> tuple[list[Line], str, int]:
    """A page's lines, why it was left out ("" when it was not), and its size in bytes of
    drawing instructions, measured before any text is extracted."""
    contents = page.get_contents()
    size = len(contents.get_data()) if contents is not None else 0
    if size > MAX_PAGE_CONTENT_BYTES:
        return [], (f"over the {MAX_PAGE_CONTENT_BYTES // 2**20} MB of drawing instructions a "
                    "page may have; not read"), size
    if total + size > MAX_PDF_CONTENT_BYTES:
        return [], (f"past the {MAX_PDF_CONTENT_BYTES // 2**20} MB of drawing instructions a "
                    "PDF may have; not read (split the file)"), size
    found = page_lines(page, number)
    if sum(len(line.text) for line in found) > MAX_PAGE_CHARS:
        return [], (f"over the {MAX_PAGE_CHARS:,} characters of text a page may have; "
                    "not read"), size
    if not found and _has_images(page):
        return [], f"images without a text layer (scanned?), not indexed; {OCR_HINT}", size
    return found, "", size


def page_list(pages: list[int]) -> str:
    """"page 3", "pages 3, 7", "pages 2,001-5,000" (runs of three or more as a range)."""
    runs: list[list[int]] = []
    for p in pages:
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    parts = [f"{r[0]:,}-{r[-1]:,}" if len(r) > 2 else ", ".join(f"{p:,}" for p in r)
             for r in runs]
    return f"page{'s' * (len(pages) > 1)} {', '.join(parts)}"


def page_lines(page, number: int) -> list[Line]:
    """The page's text lines with their dominant font size and baseline, from pypdf's visitor
    (the size a heading is detected by is the font size times the text and page scales)."""
    lines: list[Line] = []
    parts: list[str] = []
    sizes: dict[float, int] = {}
    where: list[float] = []

    def close() -> None:
        text = " ".join(CONTROL_RE.sub(" ", "".join(parts)).translate(LIGATURES).split())
        if text:
            size = max(sizes, key=sizes.__getitem__) if sizes else 0.0
            lines.append(Line(number, text, size, where[0] if where else None))
        parts.clear(), sizes.clear(), where.clear()

    def visit(text: str, cm, tm, font, font_size) -> None:
        c, d = tm[2] * cm[0] + tm[3] * cm[2], tm[2] * cm[1] + tm[3] * cm[3]
        size = round(float(font_size) * math.hypot(c, d), 1)
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        for k, part in enumerate(text.split("\n")):
            if k:
                close()
            parts.append(part)
            if part.strip():
                sizes[size] = sizes.get(size, 0) + len(part.strip())
                where.append(round(float(y), 2))

    page.extract_text(visitor_text=visit)
    close()
    return lines


def _has_images(page) -> bool:
    try:
        return len(page.images) > 0
    except Exception:  # an image that cannot even be listed still means a picture, not text
        return True


def drop_running_lines(lines: list[Line]) -> list[Line]:
    """Page numbers, and headers or footers repeated at the top or bottom of most pages, are not
    the book's text: they would split sentences across pages and match every query about the
    title. Edges are by height (a printer may draw its header last) and by order."""
    by_page: dict[int, list[Line]] = {}
    for line in lines:
        by_page.setdefault(line.page, []).append(line)
    edges: list[Line] = []
    for found in by_page.values():
        placed = [line for line in found if line.y is not None]
        edges += [found[0], found[-1]] + ([max(placed, key=lambda line: line.y),
                                           min(placed, key=lambda line: line.y)] if placed else [])
    seen: dict[str, set[int]] = {}
    for line in edges:
        seen.setdefault(_shape(line.text), set()).add(line.page)
    running = {shape for shape, pages in seen.items() if len(pages) >= max(3, len(by_page) / 2)}
    drop = {id(line) for line in edges
            if _shape(line.text) in running or PAGE_NUMBER_RE.fullmatch(line.text)}
    return [line for line in lines if id(line) not in drop]


def _shape(text: str) -> str:
    return re.sub(r"\d+", "#", text.casefold())


def metadata_title(reader) -> str:
    """The document's /Title when it names the book, not a file or a word processor."""
    try:
        title = " ".join(str((reader.metadata or {}).get("/Title") or "").split())
    except Exception:  # a damaged info dictionary: no title
        return ""
    if re.search(r"\.(html?|pdf|docx?|odt|tex)$|^(untitled|microsoft word)\b", title, re.I):
        return ""
    return title[:200]
