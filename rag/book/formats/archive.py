"""Zip containers (DOCX, EPUB) opened within bounds: a damaged archive, a zip bomb or a file of
another kind is refused with what to do, before any library reads it.

The declared sizes are a hard bound: CPython's zipfile stops a member at its declared size and
fails the CRC check when more data follows, so a member that lies about its size is reported as
damaged instead of inflating without end.
"""

from __future__ import annotations

import io
import zipfile
import zlib

from rag.book.formats.base import MAX_ENTRIES, MAX_FILE_BYTES, MAX_MARKUP_BYTES, MAX_UNPACKED_BYTES
from rag.errors import InputError

ZIP_MAGIC = b"PK\x03\x04"
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Office 97-2003 files and encrypted OOXML
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error, EOFError, OSError,
              NotImplementedError, ValueError)


def _mb(n: int) -> str:
    return f"{n / 2**20:,.1f} MB" if n >= 2**20 else f"{n / 2**10:,.0f} KB"


def _a(kind: str) -> str:
    return f"{'an' if kind[0] in 'AEIOU' else 'a'} {kind}"


def check_file_size(raw: bytes, name: str) -> None:
    if len(raw) > MAX_FILE_BYTES:
        raise InputError(f"{name} is {_mb(len(raw))}, over the {_mb(MAX_FILE_BYTES)} limit for "
                         "one book file: split it into parts and add them as separate files.")


def open_zip(raw: bytes, name: str, kind: str) -> zipfile.ZipFile:
    """The archive, after checking its entry count and unpacked size; InputError otherwise.
    `kind` names the format in messages ("Word document", "EPUB")."""
    check_file_size(raw, name)
    if not raw.startswith(ZIP_MAGIC):
        raise InputError(f"{name} is not {_a(kind)}: it is not a zip archive. Export it "
                         f"again as {_a(kind)}, or check that the file is not truncated.")
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        infos = archive.infolist()
    except ZIP_ERRORS as e:
        raise InputError(f"{name} is {_a('damaged ' + kind)} ({e}): export it again from the "
                         "program that made it.") from e
    if len(infos) > MAX_ENTRIES:
        raise InputError(f"{name} holds {len(infos):,} files, over the {MAX_ENTRIES:,} {_a(kind)} "
                         "may hold: it is not a book as saved by a book tool, so it is not read.")
    unpacked = sum(i.file_size for i in infos)
    if unpacked > MAX_UNPACKED_BYTES:
        raise InputError(f"{name} unpacks to {_mb(unpacked)}, over the "
                         f"{_mb(MAX_UNPACKED_BYTES)} limit (a zip bomb looks like this): "
                         "split the book or remove large media from it.")
    if any(i.flag_bits & 0x1 for i in infos):
        raise InputError(f"{name} is password-protected: remove the password in the program "
                         "that made it and save it again.")
    return archive


def read_member(archive: zipfile.ZipFile, member: str, name: str, kind: str,
                limit: int | None = None) -> bytes:
    """One member's bytes; InputError when it is missing, too large or damaged."""
    limit = MAX_MARKUP_BYTES if limit is None else limit
    try:
        info = archive.getinfo(member)
    except KeyError as e:
        raise InputError(f"{name} is not {_a('complete ' + kind)}: {member} is missing. Export it "
                         "again from the program that made it.") from e
    if info.file_size > limit:
        raise InputError(f"{name}: {member} is {_mb(info.file_size)}, over the {_mb(limit)} "
                         "Folio reads from one part of a book: split the book into smaller "
                         "files.")
    try:
        return archive.read(info)
    except ZIP_ERRORS as e:
        raise InputError(f"{name} is {_a('damaged ' + kind)}: {member} cannot be unpacked ({e}). "
                         "Export it again from the program that made it.") from e
