"""Heading ids as each book's renderer computes them, so a citation to a section without an
explicit `{#anchor}` builds the URL fragment the published book has.

- github: github-slugger (GitHub, Docusaurus, Jekyll's GFM input): lower case, everything but
  letters, marks, numbers, '-', '_' and spaces dropped, each space a '-'; repeats get -1, -2.
- mdbook: mdBook's normalize_id: ASCII lower case, letters, numbers, '_' and '-' kept, each
  whitespace a '-'; repeats get -1, -2.
- mkdocs: Python-Markdown's toc slugify: NFKD to ASCII, '[^\\w\\s-]' dropped, lower case, runs
  of whitespace and '-' one '-'; repeats get _1, _2.
- sphinx: docutils' make_id (Sphinx, Jupyter Book, d2l): NFKD to ASCII, lower case, runs of
  anything but [a-z0-9] one '-', leading digits and hyphens dropped; repeats get id1, id2.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

GITHUB, MDBOOK, MKDOCS, SPHINX = "github", "mdbook", "mkdocs", "sphinx"
_NOT_MKDOCS = re.compile(r"[^\w\s-]")
_MKDOCS_SEPARATORS = re.compile(r"[-\s]+")
_NOT_SPHINX = re.compile(r"[^a-z0-9]+")
_SPHINX_ENDS = re.compile(r"^[-0-9]+|-+$")


def _ascii(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def github_slug(text: str) -> str:
    return "".join(ch if ch != " " else "-" for ch in text.lower()
                   if ch in "-_ " or unicodedata.category(ch)[0] in "LMN")


def mdbook_slug(text: str) -> str:
    return "".join(("-" if ch.isspace() else ch.lower() if ch.isascii() else ch)
                   for ch in text if ch.isalnum() or ch in "_-" or ch.isspace())


def mkdocs_slug(text: str) -> str:
    return _MKDOCS_SEPARATORS.sub("-", _NOT_MKDOCS.sub("", _ascii(text)).strip().lower())


def sphinx_slug(text: str) -> str:
    return _SPHINX_ENDS.sub("", _NOT_SPHINX.sub("-", " ".join(_ascii(text.lower()).split())))


SLUGGERS: dict[str, Callable[[str], str]] = {
    GITHUB: github_slug, MDBOOK: mdbook_slug, MKDOCS: mkdocs_slug, SPHINX: sphinx_slug}


def slugify(text: str, style: str = GITHUB) -> str:
    """One heading's id in `style`, before repeats are told apart."""
    return SLUGGERS.get(style, github_slug)(text.strip())


def _repeat(base: str, n: int, style: str) -> str:
    if style == MKDOCS:
        return f"{base}_{n}"
    if style == SPHINX:
        return f"id{n}"
    return f"{base}-{n}"


class Slugger:
    """The ids of one page in `style`: a repeated heading gets the renderer's suffix, and no
    derived id takes one an author wrote (`taken`)."""

    def __init__(self, style: str = GITHUB, taken: set[str] | None = None) -> None:
        self.style = style if style in SLUGGERS else GITHUB
        self.taken = set(taken or ())
        self.counts: dict[str, int] = {}
        self.auto = 0  # sphinx: one counter for the page

    def slug(self, text: str) -> str:
        base = slugify(text, self.style) or ("section" if self.style != SPHINX else "")
        slug = base
        while not slug or slug in self.taken:
            if self.style == SPHINX:
                self.auto += 1
                slug = _repeat(base, self.auto, self.style)
            else:
                self.counts[base] = self.counts.get(base, 0) + 1
                slug = _repeat(base, self.counts[base], self.style)
        self.taken.add(slug)
        return slug


def unique_slug(title: str, taken: set[str], counts: dict[str, int]) -> str:
    """github-slugger's rule, as Docusaurus uses it: base, base-1, base-2, skipping taken IDs
    (PDF outline entries)."""
    base = slugify(title) or "section"
    slug = base
    while slug in taken:
        counts[base] = counts.get(base, 0) + 1
        slug = f"{base}-{counts[base]}"
    taken.add(slug)
    return slug
