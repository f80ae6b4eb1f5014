"""Which book the settings are about: its id and title, and which book a tuned value came from.

The title comes from the book itself unless settings.toml names it (rag.book.structure): a
`book_title:` key in the frontmatter of the book's root page, else its renderer's configuration
(book.toml, mkdocs.yml, docusaurus.config.js, _config.yml, conf.py), else its index page's first
heading, else the folder's name. A chapter's `title` names the chapter, never the book (the
Physical AI book's `intro/index.md` is "Introduction to Physical AI & Humanoid Robotics").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rag.book.parse import book_id_for, resolve_book_root
from rag.book.structure import book_title, root_title

__all__ = ["book_id_for", "frontmatter_title", "is_book", "title_of_book", "tuned_book",
           "tuned_books"]


def frontmatter_title(book_dir: Path) -> str:
    """`book_title:` from the frontmatter of index/intro/README (.md/.mdx) at the book's root
    (its docs/ folder for a Docusaurus site); "" when there is none or it cannot be read."""
    return root_title(resolve_book_root(Path(book_dir)))


def title_of_book(book_dir: Path) -> str:
    """The book's own title (rag.book.structure.book_title), else the folder's name ("docs" is
    the folder of a site, so its parent's name is the book's)."""
    book_dir = Path(book_dir)
    found = book_title(book_dir)
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
