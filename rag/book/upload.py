"""A book a reader uploads (a PDF, DOCX, EPUB or Markdown file, or a zip of a book folder) saved
as a book folder of its own: written beside its final place and renamed, so a failed upload
leaves nothing behind. A zip is unpacked within bounds: no path leaves the folder (`../x`,
absolute paths), links are not created, the bytes actually written are counted (a member that
lies about its size cannot inflate without end), and what is unpacked must be a book."""

from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from rag.book.listing import EXTENSIONS, list_book_files
from rag.errors import InputError

SINGLE_FILES = (".pdf", ".docx", ".epub", ".md", ".mdx", ".markdown")
UPLOADS = (*SINGLE_FILES, ".zip")
MAX_UPLOAD_BYTES = 200 * 2**20
MAX_UNPACKED_BYTES = 1 * 2**30
MAX_MEMBERS = 20_000
CHUNK = 1 << 20
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def folder_name(name: str) -> str:
    """A folder name (and so a book id) from an uploaded file's name: "My Book (v2).epub" ->
    "my-book-v2"."""
    stem = PurePosixPath(name.replace("\\", "/")).stem
    return _UNSAFE.sub("-", stem.lower()).strip("-._")[:60] or "book"


def _free(parent: Path, name: str) -> Path:
    path, n = parent / name, 2
    while path.exists():
        path, n = parent / f"{name}-{n}", n + 1
    return path


def save_upload(name: str, raw: bytes, library: Path) -> Path:
    """The new book folder under `library` holding the upload; InputError (nothing written)
    when it is not a book Folio reads."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in UPLOADS:
        raise InputError(f"{name} is not a book file Folio reads: upload a PDF, DOCX, EPUB or "
                         "Markdown file, or a .zip of a book folder.")
    if len(raw) > MAX_UPLOAD_BYTES:
        raise InputError(f"{name} is {len(raw) / 2**20:,.0f} MB, over the "
                         f"{MAX_UPLOAD_BYTES // 2**20} MB an upload may be: split the book.")
    library.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".upload-", dir=library))
    try:
        if suffix == ".zip":
            _unzip(raw, name, staging)
        else:
            (staging / f"{folder_name(name)}{suffix}").write_bytes(raw)
        root = _single_top(staging)
        try:
            list_book_files(root)
        except InputError as e:
            raise InputError(f"{name} holds no book: no Markdown, PDF, DOCX, EPUB or HTML file "
                             "was found in it.") from e
        if suffix in (".docx", ".epub"):
            _remember_title(root)
        target = _free(library, folder_name(name))
        root.rename(target)
        return target
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remember_title(folder: Path) -> None:
    """A document's own title (its metadata) kept in the book's folio.toml, so the book is
    named by it before it is indexed, not by its file's name."""
    import tomlkit

    from rag.book.parse import parse_book
    from rag.book.structure import FOLIO_SETTINGS

    title = parse_book(folder).title
    if title:
        (folder / FOLIO_SETTINGS).write_text(tomlkit.dumps({"book": {"title": title}}),
                                             encoding="utf-8")


def _single_top(folder: Path) -> Path:
    """A zip that holds one folder (as "Compress folder" makes it): that folder is the book."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(("__MACOSX", "."))]
    if len(entries) == 1 and entries[0].is_dir():
        return entries[0]
    return folder


def _unzip(raw: bytes, name: str, into: Path) -> None:
    import io

    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as e:
        raise InputError(f"{name} is not a readable zip archive ({e}).") from e
    if len(members) > MAX_MEMBERS:
        raise InputError(f"{name} holds {len(members):,} files, over the {MAX_MEMBERS:,} a book "
                         "upload may hold.")
    written = 0
    for member in members:
        target = _member_path(member, into)
        if target is None:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            with archive.open(member) as source, open(target, "wb") as out:
                while block := source.read(CHUNK):
                    written += len(block)
                    if written > MAX_UNPACKED_BYTES:
                        raise InputError(f"{name} unpacks to over {MAX_UNPACKED_BYTES // 2**30} "
                                         "GB (a zip bomb looks like this); it was not kept.")
                    out.write(block)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError,
                RuntimeError) as e:  # RuntimeError: an encrypted member
            raise InputError(f"{name} is damaged or encrypted ({member.filename}: {e}).") from e


def _member_path(member: zipfile.ZipInfo, into: Path) -> Path | None:
    """Where a member is written, or None for a folder, a link or a path leaving the book."""
    if member.is_dir():
        return None
    mode = member.external_attr >> 16
    if mode and (mode & 0o170000) == 0o120000:  # a symbolic link: never recreated
        return None
    parts = [p for p in PurePosixPath(member.filename.replace("\\", "/")).parts
             if p not in ("", ".")]
    if not parts or parts[0] == "/" or ".." in parts or ":" in parts[0]:
        return None
    target = into.joinpath(*parts)
    return target if target.resolve().is_relative_to(into.resolve()) else None


def is_book_upload(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in UPLOADS


__all__ = ["EXTENSIONS", "MAX_UPLOAD_BYTES", "UPLOADS", "folder_name", "is_book_upload",
           "save_upload"]
