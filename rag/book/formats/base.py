"""What every converter returns, the limits that bound one input's cost, and the problem tally.

A converter turns one book file (or a built site's pages) into Markdown chapters the Markdown
reader consumes, plus a list of what it could not interpret, counted per kind so an author sees
"images dropped: 14 (in ch01, ch03 and 2 more)" once, not fourteen lines.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import PurePosixPath

# Limits. A 300-page technical book is a 2-15 MB DOCX or EPUB whose largest XML/XHTML member is
# 1-5 MB. Measured here (2 cores shared by several sessions, load average about 10): mammoth read
# a 1.4 MB document.xml (162k words) in 3.0 s with 20 MB; BeautifulSoup + markdownify turned 5 MB
# of HTML into Markdown in 189 s with a 350 MB peak (about 70 bytes per byte), and 3.1 MB of
# mdBook pages in 18 s. An HTML document is therefore held to 8 MB (about 560 MB at most).
MAX_FILE_BYTES = 200 * 2**20  # the .docx/.epub as given
MAX_ENTRIES = 10_000  # members of the zip: a book has tens to a few thousand
MAX_UNPACKED_BYTES = 1 * 2**30  # the declared sizes of all members together (a zip bomb's tell)
MAX_MARKUP_BYTES = 32 * 2**20  # one zip member that is read (document.xml, an EPUB chapter)
MAX_HTML_BYTES = 8 * 2**20  # one HTML document BeautifulSoup parses (a page, a chapter, a DOCX)
MAX_PAGES = 5_000  # pages of a built site
MAX_DEPTH = 100  # element nesting kept as structure; deeper wrappers are flattened (see html_prep)


@dataclass(frozen=True)
class ConvertedChapter:
    path: str  # stable relative id (slug-safe, unique in the book): "ch03-loops", "text/ch03"
    title: str  # from the chapter's heading or the table of contents; "" if none
    markdown: str  # CommonMark, ATX headings; a source heading id is kept as `## Title {#id}`


@dataclass(frozen=True)
class ConvertedBook:
    title: str  # from the book's metadata; "" if none
    chapters: list[ConvertedChapter]  # in reading order
    problems: list[str] = field(default_factory=list)  # "what: count (in where)", one per kind


class Problems:
    """What was dropped or not interpreted, counted per kind with the first places it happened."""

    SHOWN_PLACES = 3

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._places: dict[str, list[str]] = {}

    def add(self, kind: str, where: str = "", count: int = 1) -> None:
        if count <= 0:
            return
        self._counts[kind] += count
        places = self._places.setdefault(kind, [])
        if where and where not in places:
            places.append(where)

    def lines(self) -> list[str]:
        out = []
        for kind, count in self._counts.items():
            places = self._places[kind]
            shown = ", ".join(places[:self.SHOWN_PLACES])
            more = len(places) - self.SHOWN_PLACES
            where = f" (in {shown}{f' and {more} more' if more > 0 else ''})" if places else ""
            out.append(f"{kind}: {count}{where}")
        return out

    def __bool__(self) -> bool:
        return bool(self._counts)


# Problem kinds, worded once. Each says what was lost and, where there is one, what to do.
IMAGE = "images dropped (Folio reads text; alt text and captions are kept)"
EMBED = "embedded media dropped (video, audio, iframe, object, canvas, drawing)"
MATH_TEXT = "formulas without a TeX form kept as plain text"
NESTED_TABLE = "tables inside a table cell flattened into the cell's text"
MERGED_CELLS = "tables with cells spanning rows (columns after them may shift)"
DEEP_NESTING = f"elements nested over {MAX_DEPTH} levels deep flattened"
PAGE_NOT_HTML = "pages not read: binary data, not HTML"
PAGE_NOT_UTF8 = ("pages not read: not UTF-8 and no charset declared (save them as UTF-8 or "
                 "declare their charset in a meta tag)")
PAGE_BAD_CHARSET = "pages not read: their declared charset is unknown or does not fit the bytes"
PAGE_TOO_LARGE = f"pages not read: over {MAX_HTML_BYTES // 2**20} MB of HTML each (split them)"
PAGE_NO_TEXT = "pages without text skipped (covers, image-only or empty pages)"


class Unreadable(Exception):
    """One page or chapter document that is skipped; its message is the problem kind."""

_UNSAFE = re.compile(r"[^\w-]+")


def path_slug(path: str) -> str:
    """A chapter path from a file's relative path: no extension, lower case, every segment
    slug-safe ("OEBPS/Text/Chapter 3.xhtml" -> "oebps/text/chapter-3"); "" if nothing is left."""
    pure = PurePosixPath(path.replace("\\", "/"))
    parts = [*pure.parent.parts, pure.stem] if pure.suffix else list(pure.parts)
    slugs = [_UNSAFE.sub("-", p.lower()).strip("-_") for p in parts if p not in ("", ".", "/")]
    return "/".join(s for s in slugs if s)


def unique_path(path: str, taken: set[str], fallback: str) -> str:
    """`path` (or `fallback` when empty), suffixed -2, -3 ... until no other chapter has it."""
    base = path or fallback
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    taken.add(candidate)
    return candidate
