"""`books`: the books Folio knows (their ids are what --book, the API and the app accept), and
`books add` for a folder or a book file (PDF, DOCX, EPUB, Markdown, or a .zip of a folder)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rag.book.upload import MAX_UPLOAD_BYTES, is_book_upload, save_upload
from rag.commands.common import print_json
from rag.config import load_settings
from rag.config.identity import title_of_book
from rag.config.library import add_folder, known_books
from rag.errors import InputError


def register(sub: argparse._SubParsersAction) -> None:
    books = sub.add_parser("books", help="list the books Folio knows, or add one")
    books.add_argument("--json", action="store_true")
    actions = books.add_subparsers(dest="action")
    add = actions.add_parser("add", help="add a book folder, or copy a book file into the "
                                         "library (then `ingest --book ID` indexes it)")
    add.add_argument("path", type=Path, help="a book folder, or a .pdf/.docx/.epub/.md/.zip")
    add.add_argument("--json", action="store_true")
    books.set_defaults(func=run_books)


def run_books(args: argparse.Namespace) -> int:
    settings = load_settings()
    if getattr(args, "action", None) == "add":
        return _add(args.path, settings.library_dir, args.json)
    rows = [{"book_id": e.book_id, "path": str(e.path), "origin": e.origin,
             "title": settings.resolved_title if e.origin == "settings" else title_of_book(e.path)}
            for e in known_books(settings.book_dir, settings.library_dir)]
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        print(f"{row['book_id']:<28} {row['title'][:40]:<40} {row['path']}")
    return 0


def _add(path: Path, library: Path, as_json: bool) -> int:
    path = path.expanduser()
    if path.is_dir():
        entry = add_folder(path, library)
        folder = entry.path
    elif path.is_file() and is_book_upload(path.name):
        if path.stat().st_size > MAX_UPLOAD_BYTES:
            raise InputError(f"{path} is over {MAX_UPLOAD_BYTES // 2**20} MB: split the book.")
        folder = save_upload(path.name, path.read_bytes(), library)
    else:
        raise InputError(f"{path} is neither a book folder nor a .pdf, .docx, .epub, .md or "
                         ".zip file.")
    from rag.book.parse import book_id_for

    result = {"book_id": book_id_for(folder), "path": str(folder)}
    if as_json:
        print_json(result)
    else:
        print(f"added {result['book_id']} ({folder}); index it with "
              f"`python -m rag ingest --book {result['book_id']}`")
    return 0
