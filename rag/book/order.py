"""The order of a book's chapters: its own table of contents where it has one
(rag.book.structure), else Docusaurus' sidebar positions (`sidebar_position` in a page's
frontmatter, `position` in a folder's `_category_.json`/`.yml`), else the folder's order with a
folder's index page first and numbers read as numbers ("ch2" before "ch10"). And the titles of
what d2l and MyST labels name, so that a `:numref:` reads as the section it points at."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

from rag.book.structure import Layout, _no_suffix
from rag.book.toc import read_yaml

INDEX_STEMS = ("index", "readme", "intro", "introduction", "_index")
NUMBER_RE = re.compile(r"(\d{1,12})")
LABEL_LINE_RE = re.compile(r"^:label:`([^`\n]{1,120})`")
NOT_LISTED = float("inf")


class HasPlace(Protocol):
    rel: Path
    meta: dict


def _natural(name: str) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part.lower())
                 for part in NUMBER_RE.split(name) if part)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return NOT_LISTED
    return float(value)


def _category_position(folder: Path, cache: dict[Path, float]) -> float:
    if folder not in cache:
        cache[folder] = NOT_LISTED
        for name in ("_category_.json", "_category_.yml", "_category_.yaml"):
            try:
                text = (folder / name).read_text(encoding="utf-8")[:100_000]
            except (OSError, UnicodeDecodeError):
                continue
            try:
                data = json.loads(text) if name.endswith("json") else read_yaml(text)
            except ValueError:
                data = None
            if isinstance(data, dict):
                cache[folder] = _number(data.get("position"))
            break
    return cache[folder]


def book_order(chapters: list[HasPlace], layout: Layout, root: Path) -> list[HasPlace]:
    """`chapters` in reading order (a stable sort: equal keys keep the folder's order)."""
    cache: dict[Path, float] = {}

    def key(chapter: HasPlace) -> tuple:
        listed = layout.position(chapter.rel.as_posix())
        if listed is not None:
            return (0, listed)
        parts = chapter.rel.parts
        steps = tuple((_category_position(root.joinpath(*parts[:n + 1]), cache), 1,
                       _natural(part)) for n, part in enumerate(parts[:-1]))
        stem = Path(parts[-1]).stem.lower()
        own = (_number(chapter.meta.get("sidebar_position")), stem not in INDEX_STEMS,
               _natural(_no_suffix(parts[-1])))
        return (1, steps + (own,))

    return sorted(chapters, key=key)


def d2l_labels(bodies: Iterable[str]) -> dict[str, str]:
    """label -> the title of the heading it labels, over the whole book."""
    labels: dict[str, str] = {}
    for body in bodies:
        if ":label:`" not in body:
            continue
        lines = body.split("\n")
        for heading, line in zip(lines, lines[1:], strict=False):
            if heading.startswith("#") and (m := LABEL_LINE_RE.match(line)):
                title = heading.lstrip("#").strip()
                if title and heading[:7].lstrip("#")[:1] in (" ", "\t"):
                    labels.setdefault(m.group(1), title[:200])
    return labels
