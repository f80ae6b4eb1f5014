"""A PDF's lines -> sections: headings from its outline (bookmarks) when it has one, else from
font size; IDs are heading slugs made unique as Markdown's are, pages are where the text is.

A section's text marks each page turn with PAGE_BREAK at the start of the next page's first
line, so the chunker can give every chunk the pages its own sentences are on.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from rag.book.slugs import unique_slug
from rag.types import Section

# The ASCII unit separator: whitespace to every reader of the text (str.split, re's \s), but
# not a line break as a form feed is to str.splitlines, so a sentence running over a page
# turn stays one sentence for the chunker and the answer units.
PAGE_BREAK = "\x1f"
MAX_OUTLINE_ENTRIES, MAX_OUTLINE_DEPTH = 5_000, 32
HEADING_SCALE = 1.15  # a line this much larger than the body text may be a heading
MAX_HEADING_WORDS, MAX_HEADING_LINES = 20, 3
PARAGRAPH_GAP = 1.3  # a gap this many times the usual line spacing starts a paragraph
BULLET_RE = re.compile(r"^[•●▪◦‣∙■□–]\s*")


@dataclass(frozen=True)
class Line:
    page: int  # 1-based
    text: str
    size: float  # font size in points; 0 when unknown
    y: float | None  # baseline height on the page (PDF units, larger is higher)


@dataclass(frozen=True)
class Heading:
    line: int  # index of the line the section starts at
    span: int  # lines the heading's own text takes (0: located by position only)
    title: str
    level: int
    page: int


def _norm(text: str) -> str:
    return re.sub(r"\W+", "", text.casefold())


def _same_title(line: str, title: str) -> bool:
    """Equal, or equal but for a section number ("2.3 Capture Point" / "Capture Point")."""
    a, b = _norm(line), _norm(title)
    if not a or not b:
        return False
    return a == b or (a.endswith(b) and a[:-len(b)].isdigit()) or \
        (b.endswith(a) and b[:-len(a)].isdigit())


def outline_entries(reader, limit: int | None = None
                    ) -> tuple[list[tuple[str, int, int, float | None]], bool]:
    """(title, depth, page, top) per bookmark that points at a page, in outline order, and
    whether that was all of them. Read one bookmark at a time from the file and stopped at
    `limit` (MAX_OUTLINE_ENTRIES): pypdf's reader.outline builds the whole outline first
    (200,000 bookmarks took 42 s and 1.34 GB before the cap could apply)."""
    limit = MAX_OUTLINE_ENTRIES if limit is None else limit
    out: list[tuple[str, int, int, float | None]] = []
    named: dict | None = None
    complete = True
    try:
        for node, depth in _outline_nodes(reader, limit):
            if node is None:
                complete = False
                break
            title = " ".join(str(node.get("/Title") or "").split())[:300]
            try:
                if named is None and isinstance(_target(node), str):
                    named = _named_destinations(reader, limit)
                destination = _destination(reader, title, _target(node), named or {})
                page = reader.get_destination_page_number(destination) if destination else None
                top = destination.get("/Top") if destination else None
            except Exception:  # a bookmark to a missing page or of a broken shape: left out
                continue
            if title and isinstance(page, int) and page >= 0:
                out.append((title, depth, page + 1,
                            float(top) if isinstance(top, int | float) else None))
    except Exception:  # a damaged outline: the bookmarks read before the damage
        pass
    return out, complete


def _outline_nodes(reader, limit: int) -> Iterator[tuple[Any, int]]:
    """(item, depth) of each bookmark in outline order, children before the next sibling; a
    last (None, depth) when `limit` were read and more were left. An item is read
    once: a cycle or an item linked twice ends there. The stack holds one entry per level."""
    from pypdf.generic import DictionaryObject

    root = reader.root_object.get("/Outlines")
    root = root.get_object() if root is not None else None
    if not isinstance(root, DictionaryObject):
        return
    stack, seen, read = [(root.raw_get("/First") if "/First" in root else None, 0)], set(), 0
    while stack:
        ref, depth = stack.pop()
        if ref is None:
            continue
        key = (ref.idnum, ref.generation) if hasattr(ref, "idnum") else id(ref)
        if key in seen:
            continue
        seen.add(key)
        node = ref.get_object()
        if not isinstance(node, DictionaryObject):
            continue
        if read == limit:
            yield None, depth
            return
        read += 1
        yield node, depth
        stack.append((node.raw_get("/Next") if "/Next" in node else None, depth))
        if depth < MAX_OUTLINE_DEPTH and "/First" in node:
            stack.append((node.raw_get("/First"), depth + 1))


def _target(node) -> Any:
    """Where a bookmark points: its /Dest, or a GoTo action's /D (PDF 1.7 §12.3.3)."""
    target = node.get("/Dest")
    action = node.get("/A")
    if target is None and hasattr(action, "get") and action.get("/S") == "/GoTo":
        target = action.get("/D")
    return target.get("/D") if hasattr(target, "get") else target


def _destination(reader, title: str, target: Any, named: dict) -> Any:
    """A pypdf Destination for an explicit [page /Fit ...] array or a named destination."""
    from pypdf.generic import ArrayObject, Destination, Fit

    if isinstance(target, str):
        return named.get(str(target))
    if not isinstance(target, ArrayObject) or len(target) < 2:
        return None
    page, fit, *args = target
    return Destination(title, page, Fit(fit_type=fit, fit_args=tuple(args)))


def _named_destinations(reader, limit: int) -> dict:
    """The document's named destinations, read only when a bookmark uses one and no more of
    them than bookmarks are read (pypdf's own limit is 100,000 tree nodes)."""
    from pypdf import apply_configuration

    try:
        with apply_configuration(named_destinations_maximum_entries=limit):
            return reader.named_destinations
    except Exception:  # too many or damaged: bookmarks by name are left out
        return {}


def outline_headings(entries: Sequence[tuple[str, int, int, float | None]],
                     lines: Sequence[Line]) -> list[Heading]:
    """Each bookmark (outline_entries) placed at its heading's line on its page (by title, else
    by height)."""
    starts: dict[int, int] = {}
    for i, line in enumerate(lines):
        starts.setdefault(line.page, i)
    pages = sorted(starts)
    bound = [starts[p] for p in pages] + [len(lines)]
    headings: list[Heading] = []
    cursor = 0
    for title, depth, page, top in sorted(entries, key=lambda e: e[2]):
        first = bound[bisect_left(pages, page)]  # the first line on or after its page
        start = max(cursor, first)
        end = bound[bisect_right(pages, page)]
        at, span = _find_title(lines, title, start, end)
        if at is None:
            at = next((i for i in range(start, end) if top is not None
                       and lines[i].y is not None and lines[i].y <= top + 1), start)
        headings.append(Heading(at, span, title, min(depth + 1, 6), page))
        cursor = at + span
    return headings


def _find_title(lines: Sequence[Line], title: str, start: int, end: int
                ) -> tuple[int | None, int]:
    for i in range(start, end):
        for span in range(1, MAX_HEADING_LINES + 1):
            if i + span > end:
                break
            if _same_title(" ".join(line.text for line in lines[i:i + span]), title):
                return i, span
    return None, 0


def body_size(lines: Sequence[Line]) -> float:
    """The font size most of the text is set in."""
    weights: dict[float, int] = {}
    for line in lines:
        if line.size:
            weights[line.size] = weights.get(line.size, 0) + len(line.text)
    return max(weights, key=weights.__getitem__) if weights else 0.0


def size_headings(lines: Sequence[Line]) -> list[Heading]:
    """Short lines set larger than the body text; a heading wrapped over lines is one heading,
    and the largest size is level 1."""
    body = body_size(lines)
    if not body:
        return []
    found: list[tuple[int, int, float]] = []  # (first line, lines, size)
    for i, line in enumerate(lines):
        words = line.text.split()
        if not (line.size >= body * HEADING_SCALE and len(words) <= MAX_HEADING_WORDS
                and re.search(r"[^\W\d_]", line.text)):
            continue
        if found and found[-1][0] + found[-1][1] == i and found[-1][2] == line.size \
                and found[-1][1] < MAX_HEADING_LINES and lines[i - 1].page == line.page:
            found[-1] = (found[-1][0], found[-1][1] + 1, line.size)
        else:
            found.append((i, 1, line.size))
    sizes = sorted({size for _, _, size in found}, reverse=True)
    return [Heading(i, span, " ".join(line.text for line in lines[i:i + span]),
                    min(sizes.index(size) + 1, 6), lines[i].page) for i, span, size in found]


def join_lines(body: Sequence[Line], spacing: float) -> str:
    """Lines as text: a blank line where the gap says a paragraph starts, bullets as "- ",
    a PAGE_BREAK per page turned."""
    out: list[str] = []
    for k, line in enumerate(body):
        text = BULLET_RE.sub("- ", line.text) if BULLET_RE.match(line.text) else line.text
        if k:
            prev = body[k - 1]
            if line.page != prev.page:
                text = PAGE_BREAK * (line.page - prev.page) + text
            elif text.startswith("- ") or line.size != prev.size or (
                    spacing and prev.y is not None and line.y is not None
                    and prev.y - line.y > spacing * PARAGRAPH_GAP):
                out.append("")
        out.append(text)
    return "\n".join(out)


def line_spacing(lines: Sequence[Line]) -> float:
    """The usual distance between two lines of one paragraph."""
    gaps = [a.y - b.y for a, b in zip(lines, lines[1:], strict=False)
            if a.page == b.page and a.size == b.size and a.y is not None and b.y is not None
            and a.y > b.y]
    return median(gaps) if gaps else 0.0


def build_sections(lines: Sequence[Line], headings: list[Heading], rel: Path, module_id: str,
                   chapter_id: str, meta_title: str) -> tuple[str, list[Section]]:
    """The chapter's title and its sections: text before the first heading is the chapter's
    own section (id ""), a lone top-level heading opening the file is the chapter's title."""
    title = meta_title or chapter_id.rsplit("/", 1)[-1].replace("-", " ").title()
    start = 0
    top = min((h.level for h in headings), default=0)
    if headings and headings[0].line == 0 and headings[0].level == top \
            and sum(h.level == top for h in headings) == 1:
        lead = headings.pop(0)
        title, start = lead.title, lead.span
    spacing = line_spacing(lines)
    taken: set[str] = set()
    counts: dict[str, int] = {}
    stack: list[tuple[int, str]] = []
    sections: list[Section] = []
    bounds = [h.line for h in headings] + [len(lines)]
    pieces = [(None, lines[start:bounds[0]])] + [
        (h, lines[h.line + h.span:bounds[k + 1]]) for k, h in enumerate(headings)]
    for heading, body in pieces:
        if heading is None:
            section_id, name, path = "", title, (title,)
            page = body[0].page if body else 1
        else:
            stack = [(lvl, t) for lvl, t in stack if lvl < heading.level]
            stack.append((heading.level, heading.title))
            section_id, name = unique_slug(heading.title, taken, counts), heading.title
            path = (title, *(t for _, t in stack))
            page = body[0].page if body else heading.page
        text = join_lines(body, spacing)
        if not text and not section_id:
            continue
        sections.append(Section(
            module_id=module_id, chapter_id=chapter_id, section_id=section_id, title=name,
            chapter_title=title, heading_path=path, stable=True, text=text, page=page,
            page_end=body[-1].page if body else page, source_path=rel.as_posix()))
    return title, sections
