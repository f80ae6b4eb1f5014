"""Which files of a folder are the book's, and their bytes, within bounds: a symlink loop, a
tree 1,200 folders deep, a link to a file outside the book or a hard link to one are skipped
with a reason instead of stopping the whole ingest (each had raised a traceback)."""

from __future__ import annotations

import os
from pathlib import Path

from rag.errors import InputError

MARKDOWN = (".md", ".mdx", ".markdown")
DOCUMENTS = (".pdf", ".docx", ".epub")
PAGES = (".html", ".htm", ".xhtml")
EXTENSIONS = (*MARKDOWN, *DOCUMENTS, *PAGES)
MAX_DEPTH = 32  # folders below the book's root
MAX_FILES = 20_000
MAX_FILE_BYTES = 64 * 1024 * 1024
SKIPPED_FOLDERS = ("node_modules", "site-packages", "__pycache__")


def _skipped(name: str) -> bool:
    return name.startswith((".", "_")) or name in SKIPPED_FOLDERS


def list_book_files(root: Path) -> tuple[list[Path], list[dict[str, str]]]:
    """The book's files in path order and the ones left out with why. HTML pages are the book
    only when it has no Markdown or document files (a built site); beside Markdown they are the
    site's static pages."""
    root = Path(root)
    if not root.is_dir():
        raise InputError(f"The book folder {root} does not exist; pass --book DIR or set RAG_BOOK.")
    found: list[Path] = []
    problems: list[dict[str, str]] = []
    for folder, dirs, names in os.walk(root, followlinks=False, onerror=None):
        rel = Path(folder).relative_to(root)
        if len(rel.parts) >= MAX_DEPTH:
            problems.append({"path": rel.as_posix(), "reason": f"more than {MAX_DEPTH} folders "
                             "deep; what is below was not read"})
            dirs[:] = []
        for name in list(dirs):
            if _skipped(name):
                dirs.remove(name)
            elif os.path.islink(os.path.join(folder, name)):
                dirs.remove(name)
                problems.append({"path": (rel / name).as_posix(), "reason": "a link to a "
                                 "folder; not followed (copy the folder into the book)"})
        dirs.sort()
        for name in sorted(names):
            if Path(name).suffix.lower() in EXTENSIONS and not _skipped(name):
                found.append(Path(folder) / name)
        if len(found) > MAX_FILES:
            problems.append({"path": ".", "reason": f"more than {MAX_FILES} files; the rest "
                             "were not read"})
            found = found[:MAX_FILES]
            break
    if any(p.suffix.lower() in (*MARKDOWN, *DOCUMENTS) for p in found):
        pages = [p for p in found if p.suffix.lower() in PAGES]
        found = [p for p in found if p.suffix.lower() not in PAGES]
        if pages:
            problems.append({"path": f"{len(pages)} .html page(s)", "reason": "HTML pages "
                             "beside Markdown are the site's own pages, not chapters"})
    if not found:
        raise InputError(f"The book folder {root} has no Markdown (.md, .mdx), PDF, DOCX, "
                         "EPUB or HTML files.")
    return found, problems


def read_book_file(path: Path, root: Path) -> bytes:
    """The file's bytes; InputError for a link leaving the book, a link loop, a hard link, a
    file gone, too large or unreadable. A book should not read outside its folder: a chapter
    linked to /etc/passwd was indexed."""
    try:
        target = path.resolve(strict=True)  # also catches a file reached through a linked folder
    except (OSError, RuntimeError) as e:
        if path.is_symlink():
            return _broken_link(path, e)
        raise InputError("the file disappeared while the book was being read") from e
    if not target.is_relative_to(root.resolve()):
        raise InputError(f"a symlink to {target}, outside the book folder; not followed "
                         "(copy the file into the book to include it)")
    try:
        stat = target.stat()
        if stat.st_nlink > 1 and not path.is_symlink():
            raise InputError("a hard link: the same file may be elsewhere on disk, outside the "
                             "book; not read (copy the file into the book to include it)")
        if stat.st_size > MAX_FILE_BYTES:
            raise InputError(f"{stat.st_size // (1024 * 1024)} MB; a chapter file may be at "
                             f"most {MAX_FILE_BYTES // (1024 * 1024)} MB")
        with open(target, "rb") as f:
            return f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError as e:  # removed or renamed while the book was being read
        raise InputError("the file disappeared while the book was being read") from e
    except OSError as e:
        raise InputError(f"could not be read ({e.strerror or e})") from e


def _broken_link(path: Path, error: Exception) -> bytes:
    if isinstance(error, RuntimeError) or getattr(error, "errno", None) == 40:  # ELOOP
        raise InputError("a symlink loop (the link points back at itself); not followed")
    raise InputError(f"a symlink to {os.readlink(path)}, which does not exist")
