"""Which books Folio knows: the settings' book, every book folder in the library (uploads land
there), and folders a reader added by path (listed in the library's `library.toml`). A book is
named by its id (its folder's name, as every index, audit row and citation names it): the CLI's
`--book`, the API's `book` and the app's picker accept the same ids."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from rag.book.listing import list_book_files
from rag.book.parse import book_id_for
from rag.errors import ConfigError, InputError
from rag.index.durable import write_text

REGISTRY = "library.toml"
MAX_BOOKS = 500


@dataclass(frozen=True)
class BookEntry:
    book_id: str
    path: Path
    origin: str  # "settings" | "library" (uploaded) | "added" (a folder added by path)


def _registered(library: Path) -> list[Path]:
    try:
        data = tomllib.loads((library / REGISTRY).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    books = data.get("book", [])
    return [Path(b["path"]) for b in books[:MAX_BOOKS]
            if isinstance(b, dict) and isinstance(b.get("path"), str)]


def _library_entries(library: Path) -> list[BookEntry]:
    """The uploaded books (folders in `library`) and the folders added by path, as stored."""
    folders = sorted(p for p in library.iterdir() if p.is_dir() and not p.name.startswith("."))\
        if library.is_dir() else []
    return [*(BookEntry(book_id_for(p), p, "library") for p in folders[:MAX_BOOKS]),
            *(BookEntry(book_id_for(p), p, "added") for p in _registered(library))]


def known_books(settings_book: Path, library: Path) -> list[BookEntry]:
    """Every book, the settings' first; each id once (a later book whose folder has the same
    name as an earlier one is left out: its index and audit rows would be the earlier's)."""
    entries = [BookEntry(book_id_for(settings_book), Path(settings_book), "settings"),
               *_library_entries(library)]
    seen: set[str] = set()
    out = []
    for entry in entries:
        if entry.book_id not in seen:
            seen.add(entry.book_id)
            out.append(entry)
    return out


def resolve_book(ref: str | Path, settings_book: Path, library: Path) -> Path:
    """A book folder from a path or a book id; ConfigError listing the ids when neither."""
    path = Path(ref).expanduser()
    if path.is_dir():
        return path
    books = known_books(settings_book, library)
    for entry in books:
        if entry.book_id == str(ref):
            return entry.path
    ids = ", ".join(e.book_id for e in books)
    raise ConfigError(f"No book folder or book id '{ref}': the folder does not exist; pass "
                      f"--book DIR or set RAG_BOOK to an existing folder (known books: {ids}), "
                      "or add one with the app's Books panel or `python -m rag books add DIR`.")


def add_folder(folder: Path, library: Path) -> BookEntry:
    """Remember a book folder by its path; InputError when it is no book, ConfigError when its
    id is another book's."""
    folder = Path(folder).expanduser().resolve()
    list_book_files(folder if not (folder / "docs").is_dir() else folder / "docs")
    book_id = book_id_for(folder)
    for entry in _library_entries(library):  # every one, not only those known_books keeps
        if entry.book_id == book_id and entry.path.resolve() != folder:
            raise ConfigError(f"Another book is already named '{book_id}' ({entry.path}); "
                              "rename one of the folders.")
    paths = [p for p in _registered(library) if p.resolve() != folder] + [folder]
    library.mkdir(parents=True, exist_ok=True)
    write_text(library / REGISTRY, tomlkit.dumps({"book": [{"path": str(p)} for p in paths]}))
    return BookEntry(book_id, folder, "added")


__all__ = ["BookEntry", "InputError", "add_folder", "known_books", "resolve_book"]
