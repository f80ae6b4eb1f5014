"""Book folder (.md/.mdx + YAML frontmatter, .pdf) -> sections with stable IDs, and a report."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from rag.book.frontmatter import chapter_signals, load_frontmatter
from rag.book.inline import CODE_SPAN_RE
from rag.book.pdf import PDF_READER_VERSION, read_pdf
from rag.book.slugs import slugify, unique_slug
from rag.errors import InputError
from rag.types import Section

EXTENSIONS = (".md", ".mdx", ".pdf")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ANCHOR_RE = re.compile(r"\s*\{#([A-Za-z0-9_\-:.]+)\}\s*$")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
MDX_IMPORT_RE = re.compile(r"^\s*(import|export)\s")
JSX_TAG_RE = re.compile(r"</?[A-Za-z][A-Za-z0-9_.:-]*(\s[^<>]*)?/?>")
ADMONITION_RE = re.compile(r"^\s*:::\s*([a-z]+)?(?:\[([^\]]*)\]|\s+(.*))?\s*$")


@dataclass
class BookReport:
    """What an author needs to fix, next to what was read."""

    files: int = 0
    sections: int = 0
    unstable_ids: int = 0
    unstable_files: list[str] = field(default_factory=list)
    skipped_files: list[dict[str, str]] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # frontmatter values that were ignored


@dataclass
class Book:
    root: Path
    book_id: str
    sections: list[Section]
    chapters: dict[str, dict]  # "module/chapter" -> {title, path, page, sidebar_position}
    report: BookReport
    content_hash: str


def resolve_book_root(root: Path) -> Path:
    """A Docusaurus project folder holds its chapters under docs/; use that when present."""
    root = Path(root)
    return root / "docs" if (root / "docs").is_dir() else root


def list_book_files(root: Path) -> list[Path]:
    if not root.is_dir():
        raise InputError(f"The book folder {root} does not exist; pass --book DIR or set RAG_BOOK.")
    # Symlinks are listed even when dangling, so that parse_book reports them.
    files = sorted(p for p in root.rglob("*") if p.suffix in EXTENSIONS
                   and (p.is_file() or p.is_symlink())
                   and not any(part.startswith((".", "_")) or part == "node_modules"
                               for part in p.relative_to(root).parts))
    if not files:
        raise InputError(f"The book folder {root} has no .md or .mdx files and no .pdf files.")
    return files


def clean_body(body: str, mdx: bool) -> list[tuple[str, bool]]:
    """Lines with a flag for code; MDX imports and JSX tags dropped (not inside code, fenced or
    inline), admonition text kept."""
    out: list[tuple[str, bool]] = []
    in_code = False
    for line in body.splitlines():
        if FENCE_RE.match(line):
            in_code = not in_code
            out.append((line, True))
            continue
        if in_code:
            out.append((line, True))
            continue
        # Dropped lines become blank ones so that line numbers in reports match the file.
        if mdx and MDX_IMPORT_RE.match(line):
            out.append(("", False))
            continue
        match = ADMONITION_RE.match(line)
        if match:
            title = match.group(2) or match.group(3)
            label = f"{(title or match.group(1)).strip().capitalize()}:" if match.group(1) else ""
            out.append((label, False))
            continue
        out.append((_without_tags(line), False))
    return out


def _without_tags(line: str) -> str:
    """JSX/HTML tags out of a prose line, but not out of its inline code: in
    "`ros2 launch <yourname>_sim sim.launch.py`" the placeholder is part of the command."""
    parts = CODE_SPAN_RE.split(line)  # even: prose, odd: what a code span holds
    return "".join(f"`{part}`" if k % 2 else JSX_TAG_RE.sub("", part)
                   for k, part in enumerate(parts))


def explicit_anchors(lines: list[tuple[str, bool]]) -> set[str]:
    """Every {#anchor} on a heading outside code: generated slugs must not take one of them."""
    found = set()
    for line, is_code in lines:
        heading = None if is_code else HEADING_RE.match(line)
        anchor = ANCHOR_RE.search(heading.group(2)) if heading else None
        if anchor:
            found.add(anchor.group(1))
    return found


def parse_chapter(text: str, rel: Path, module_id: str, chapter_id: str, meta: dict,
                  report: BookReport, first_line: int = 1) -> list[Section]:
    """Split one file's body at headings; each heading starts a section.

    first_line is the file line the body starts on, so reports name lines an author can find.
    """
    page = meta.get("page") if isinstance(meta.get("page"), int) else None
    signals, problems = chapter_signals(meta)
    report.notes.extend(f"{rel.as_posix()}: {problem}" for problem in problems)
    chapter_title = str(meta.get("title") or chapter_id.replace("-", " ").title())
    lines = clean_body(text, mdx=rel.suffix == ".mdx")
    current = {"id": "", "title": chapter_title, "path": (chapter_title,), "stable": True,
               "line": 0}
    buffer: list[tuple[str, bool]] = []
    sections: list[Section] = []
    seen_anchors: dict[str, int] = {}
    slug_counts: dict[str, int] = {}
    taken_ids = explicit_anchors(lines)
    stack: list[tuple[int, str]] = []

    def flush() -> None:
        body = "\n".join(line for line, _ in buffer).strip()
        if current.get("skip"):
            return
        sections.append(Section(
            module_id=module_id, chapter_id=chapter_id, section_id=current["id"],
            title=current["title"], chapter_title=chapter_title, heading_path=current["path"],
            stable=current["stable"], text=body, page=page, source_path=rel.as_posix(),
            has_code=any(code for _, code in buffer), **signals))

    for number, (line, is_code) in enumerate(lines, start=first_line):
        match = None if is_code else HEADING_RE.match(line)
        if not match:
            buffer.append((line, is_code))
            continue
        level, heading = len(match.group(1)), match.group(2)
        anchor = ANCHOR_RE.search(heading)
        title = ANCHOR_RE.sub("", heading).strip()
        if level == 1 and not sections and not anchor and not "".join(t for t, _ in buffer).strip():
            # A leading H1 is the chapter's title, not a section of its own.
            chapter_title = str(meta.get("title") or title)
            current.update(title=chapter_title, path=(chapter_title,))
            continue
        flush()
        buffer = []
        stack = [(lvl, t) for lvl, t in stack if lvl < level] + [(level, title)]
        current = {"title": title, "path": (chapter_title, *(t for _, t in stack)),
                   "line": number, "skip": False}
        if anchor:
            section_id = anchor.group(1)
            if section_id in seen_anchors:
                report.duplicates.append(
                    f"{rel.as_posix()}: anchor {{#{section_id}}} on line {number} repeats line "
                    f"{seen_anchors[section_id]}; the later section was skipped")
                current["skip"] = True
            seen_anchors.setdefault(section_id, number)
            current.update(id=section_id, stable=True)
        else:
            current.update(id=unique_slug(title, taken_ids, slug_counts), stable=False)
    flush()
    return [s for s in sections if s.text or s.section_id]


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(f"not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})") from e


def _read_meta(raw: bytes) -> tuple[dict, str, int]:
    """Frontmatter, the body, and the file line the body starts on."""
    from frontmatter import YAMLHandler

    text = _decode(raw)
    if "\x00" in text:
        raise InputError("contains NUL bytes")
    handler = YAMLHandler()
    stripped = text.lstrip()
    if not handler.detect(stripped):
        return {}, text, 1
    try:
        front, body = handler.split(stripped)
    except ValueError:  # an opening --- without a closing one: no frontmatter, as Docusaurus
        return {}, text, 1
    offset = text.count("\n", 0, len(text) - len(stripped)) + 1  # yaml counts from the ---
    meta = load_frontmatter(front, offset)
    return meta, body, text.count("\n", 0, len(text) - len(body)) + 1


def _read_file(path: Path, root: Path) -> bytes:
    """The file's bytes; InputError for a symlink leaving the book, or a file gone or unreadable.

    A book should not read outside its folder: a chapter linked to /etc/passwd was indexed.
    """
    target = path.resolve()  # also catches a file reached through a linked folder
    if path.is_symlink() and not target.exists():
        raise InputError(f"a symlink to {target}, which does not exist")
    if not target.is_relative_to(root.resolve()):
        raise InputError(f"a symlink to {target}, outside the book folder; not followed "
                         "(copy the file into the book to include it)")
    try:
        return path.read_bytes()
    except FileNotFoundError as e:  # removed or renamed while the book was being read
        raise InputError("the file disappeared while the book was being read") from e
    except OSError as e:
        raise InputError(f"could not be read ({e.strerror or e})") from e


def chapter_ids(rel: Path, meta: dict) -> tuple[str, str]:
    """module_id (frontmatter, else top folder) and chapter_id (frontmatter id, else file stem).

    Docusaurus ids are folder-relative, so a file in a subfolder of its module keeps that
    subfolder: module/intro.md and module/assessments/intro.md are two chapters, and the URL
    built from the ids is the site's own.
    """
    if meta.get("module_id"):
        return str(meta["module_id"]), str(meta.get("id") or rel.stem)
    module_id = rel.parts[0] if len(rel.parts) > 1 else ""
    stem = (slugify(rel.stem) or "document") if rel.suffix == ".pdf" else rel.stem
    return module_id, "/".join([*rel.parts[1:-1], str(meta.get("id") or stem)])


def parse_book(root: Path) -> Book:
    """Read every chapter; a bad file is skipped and reported, the rest of the book still loads."""
    given = Path(root)
    root = resolve_book_root(given)
    files = list_book_files(root)
    report = BookReport()
    sections: list[Section] = []
    chapters: dict[str, dict] = {}
    digest = hashlib.sha256()
    for path in files:
        rel = path.relative_to(root)
        try:
            raw = _read_file(path, root)
            pdf = rel.suffix == ".pdf"
            digest.update(rel.as_posix().encode() + b"\0" + raw + b"\0"
                          + (PDF_READER_VERSION if pdf else b""))
            meta, body, first_line = ({}, "", 1) if pdf else _read_meta(raw)
        except InputError as e:
            report.skipped_files.append({"path": rel.as_posix(), "reason": str(e)})
            continue
        module_id, chapter_id = chapter_ids(rel, meta)
        key = f"{module_id}/{chapter_id}"
        if key in chapters:
            reason = (f"chapter id '{chapter_id}' in module '{module_id}' is already used by "
                      f"{chapters[key]['path']}")
            report.duplicates.append(f"{rel.as_posix()}: {reason}; this file was skipped")
            report.skipped_files.append({"path": rel.as_posix(), "reason": reason})
            continue
        if pdf:
            try:
                read = read_pdf(raw, rel, module_id, chapter_id)
            except InputError as e:
                report.skipped_files.append({"path": rel.as_posix(), "reason": str(e)})
                continue
            found = list(read.sections)
            report.skipped_files.extend({"path": f"{rel.as_posix()} {pages}", "reason": why}
                                        for pages, why in read.problems)
        else:
            found = parse_chapter(body, rel, module_id, chapter_id, meta, report, first_line)
        chapters[key] = {"title": found[0].chapter_title if found else chapter_id,
                         "path": rel.as_posix(), "page": meta.get("page"),
                         "position": meta.get("sidebar_position"), "module_id": module_id,
                         "chapter_id": chapter_id, "description": meta.get("description", "")}
        sections.extend(found)
        report.files += 1
        if any(not s.stable for s in found):
            report.unstable_files.append(rel.as_posix())
    report.sections = len(sections)
    report.unstable_ids = sum(not s.stable for s in sections)
    return Book(root=root, book_id=book_id_for(given), sections=sections, chapters=chapters,
                report=report, content_hash=digest.hexdigest())


def book_id_for(root: Path) -> str:
    """The folder name, or its parent's for a bare docs/ folder."""
    path = Path(root).resolve()
    name = path.parent.name if path.name == "docs" else path.name
    return slugify(name) or "book"
