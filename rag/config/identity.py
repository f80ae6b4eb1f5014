"""Which book the settings are about: its id and title, and which book a tuned value came from.

The title comes from the book itself unless settings.toml names it: a `book_title:` key in the
frontmatter of the book's root page, else a Docusaurus site's config `title`, else the folder's
name. Only a dedicated key counts: a chapter's `title` names the chapter, never the book (the
Physical AI book's `intro/index.md` is "Introduction to Physical AI & Humanoid Robotics").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rag.book.frontmatter import MAX_FRONTMATTER_BYTES, load_frontmatter
from rag.book.parse import book_id_for, resolve_book_root
from rag.errors import InputError

__all__ = ["book_id_for", "frontmatter_title", "is_book", "title_of_book", "tuned_book",
           "tuned_books"]
BOOK_TITLE_KEY = "book_title"
ROOT_PAGES = tuple(f"{stem}{ext}" for stem in ("index", "intro", "README")
                   for ext in (".md", ".mdx"))
MAX_TITLE_CHARS = 200
DOCUSAURUS_CONFIGS = ("docusaurus.config.js", "docusaurus.config.ts")
# `^[^\S\n]*`, not `^\s*`: from every line start of 10,000 blank lines \s* ran to the end (1.6 s)
DOCUSAURUS_TITLE = re.compile(r"^[^\S\n]*title:\s*(['\"`])(.+?)\1\s*(?:,\s*)?$", re.MULTILINE)
FRONTMATTER = re.compile(r"\A\ufeff?\s*---[ \t]*\r?\n(.*?)^---[ \t]*$", re.DOTALL | re.MULTILINE)


def frontmatter_title(book_dir: Path) -> str:
    """`book_title:` from the frontmatter of index/intro/README (.md/.mdx) at the book's root
    (its docs/ folder for a Docusaurus site); "" when there is none or it cannot be read."""
    root = resolve_book_root(Path(book_dir))
    for name in ROOT_PAGES:
        path = root / name
        try:
            if not path.resolve().is_relative_to(root.resolve()):
                continue  # a link out of the book is not the book's page
            with path.open("rb") as f:
                head = f.read(MAX_FRONTMATTER_BYTES + 1024).decode("utf-8", errors="replace")
        except OSError:
            continue
        found = FRONTMATTER.match(head)
        if not found:
            continue
        try:
            value = load_frontmatter(found.group(1), 1).get(BOOK_TITLE_KEY)
        except InputError:
            continue
        if isinstance(value, str) and value.strip():
            return " ".join(value.split())[:MAX_TITLE_CHARS]
    return ""


def docusaurus_title(book_dir: Path) -> str:
    """The title a Docusaurus site gives itself in its config, beside docs/ or in the folder."""
    for folder in (book_dir, book_dir.parent):
        for name in DOCUSAURUS_CONFIGS:
            try:
                text = (folder / name).read_text(encoding="utf-8")[:100_000]
            except (OSError, UnicodeDecodeError):
                continue
            if found := DOCUSAURUS_TITLE.search(text):
                return found.group(2).strip()
    return ""


def title_of_book(book_dir: Path) -> str:
    """The book's own title: frontmatter, Docusaurus config, else the folder's name ("docs" is
    the folder of a Docusaurus site, so its parent's name is the book's)."""
    book_dir = Path(book_dir)
    found = frontmatter_title(book_dir) or docusaurus_title(book_dir)
    if found:
        return found
    folder = book_dir.parent if book_dir.name == "docs" else book_dir
    return folder.name.replace("-", " ").replace("_", " ").title()


def tuned_book(settings_data: dict[str, Any], embedder: str, key: str) -> str:
    """The book (as recorded, e.g. "data/book") of the newest `[[history]]` entry that set
    `[embedders.<embedder>] <key>` to the value the file holds now; "" when no entry did (a
    value written by hand or a design default is not known to come from any book)."""
    spec = (settings_data.get("embedders") or {}).get(embedder) or {}
    if key not in spec:
        return ""
    for entry in reversed(settings_data.get("history") or []):
        if isinstance(entry, dict) and entry.get("embedder") == embedder and key in entry:
            same = entry[key] == spec[key]
            book = entry.get("book")
            return book if same and isinstance(book, str) else ""
    return ""


def tuned_books(settings_data: dict[str, Any], embedder: str,
                explicit_threshold: bool) -> dict[str, str]:
    """Settings' threshold_book and gate_book (a threshold set for this run has none)."""
    return {"threshold_book": "" if explicit_threshold else tuned_book(settings_data, embedder,
                                                                       "threshold"),
            "gate_book": tuned_book(settings_data, embedder, "gate_caveat")}


def is_book(recorded: str, book_dir: Path, project_root: Path) -> bool:
    """Whether a book path as settings.toml records it (relative to the project, as the tuning
    page writes it, or absolute) is the book at `book_dir` (a site or its docs/ alike)."""
    path = Path(recorded).expanduser()
    path = path if path.is_absolute() else project_root / path
    return resolve_book_root(path).resolve() == \
        resolve_book_root(Path(book_dir).expanduser()).resolve()
