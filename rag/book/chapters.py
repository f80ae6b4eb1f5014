"""One chapter's parts (rag.book.markdown.reader) -> sections with ids: the author's explicit id
where there is one, else the id the book's renderer derives from the heading (rag.book.slugs),
marked derived (not stable: it changes when the heading's wording does)."""

from __future__ import annotations

import re
from pathlib import Path

from rag.book.markdown.reader import Part
from rag.book.slugs import Slugger
from rag.types import Section

# an id a URL can carry as it is: no '/', '#', '?', spaces or '..' (a frontmatter `id: ../../x`
# went raw into citation links)
SAFE_ID_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$")


def safe_id(value: object) -> str:
    """`value` when it is a usable id, else ""."""
    text = str(value).strip() if value is not None else ""
    return text if SAFE_ID_RE.match(text) and ".." not in text else ""


def chapter_title(parts: list[Part], meta: dict, toc_title: str, rel: Path) -> str:
    """Frontmatter title, the first heading when it is the page's H1, the table of contents'
    title, else the file name ("ch08-02-strings" -> "Ch08 02 Strings")."""
    first = next((p.heading for p in parts if p.heading is not None), None)
    if meta.get("title"):
        return " ".join(str(meta["title"]).split())
    if first is not None and first.level == 1 and first.title:
        return first.title
    return toc_title or rel.stem.replace("-", " ").replace("_", " ").title()


def leading_title(parts: list[Part]) -> bool:
    """A first heading that is the page's H1 with nothing before it names the chapter: it is not
    a section of its own (its text is the chapter's opening)."""
    first = parts[1].heading if len(parts) > 1 else None
    return bool(first and first.level == 1 and not first.anchor and not parts[0].text.strip())


def chapter_sections(parts: list[Part], title: str, rel: Path, module_id: str,
                     chapter_id: str, meta: dict, signals: dict, style: str,
                     duplicates: list[str]) -> list[Section]:
    """Sections of one chapter; a repeated explicit id skips the later section (reported in
    `duplicates`)."""
    if leading_title(parts):
        parts = [Part(None, parts[1].blocks, parts[1].has_code), *parts[2:]]
    page = meta.get("page") if isinstance(meta.get("page"), int) else None
    explicit = {safe_id(p.heading.anchor) for p in parts if p.heading} - {""}
    slugger = Slugger(style, explicit)
    seen: dict[str, int] = {}
    stack: list[tuple[int, str]] = []
    sections = []
    for part in parts:
        heading = part.heading
        if heading is None:
            section_id, stable, path, name = "", True, (title,), title
        else:
            stack = [(lvl, t) for lvl, t in stack if lvl < heading.level] + \
                [(heading.level, heading.title)]
            path, name = (title, *(t for _, t in stack)), heading.title
            anchor = safe_id(heading.anchor)
            if anchor and anchor in seen:
                duplicates.append(f"{rel.as_posix()}: anchor {{#{anchor}}} on line "
                                  f"{heading.line} repeats line {seen[anchor]}; the later "
                                  "section was skipped")
                continue
            if anchor:
                seen[anchor] = heading.line
            section_id, stable = (anchor, True) if anchor else (slugger.slug(heading.title),
                                                                False)
        text = part.text
        if text or section_id:
            sections.append(Section(
                module_id=module_id, chapter_id=chapter_id, section_id=section_id, title=name,
                chapter_title=title, heading_path=path, stable=stable, text=text, page=page,
                source_path=rel.as_posix(), has_code=part.has_code, **signals))
    return sections
