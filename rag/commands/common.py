"""Arguments and output helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rag.config import Settings, load_settings
from rag.config.library import resolve_book


def add_book_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--book", metavar="DIR|ID",
                        help="book folder, or the id of a book Folio knows (its folder's name; "
                             "`python -m rag books` lists them; default: RAG_BOOK or data/book)")
    parser.add_argument("--index", metavar="DIR", type=Path,
                        help="index folder (default: RAG_INDEX_DIR or data/index)")
    parser.add_argument("--embedder", metavar="NAME",
                        help="local or cohere (default: RAG_EMBEDDER)")


def settings_from(args: argparse.Namespace, **extra: Any) -> Settings:
    """Settings for the command's book: a folder, or a known book's id (rag.config.library)."""
    book = getattr(args, "book", None)
    settings = load_settings(index_dir=getattr(args, "index", None),
                             embedder=getattr(args, "embedder", None), **extra)
    if book is None:
        return settings
    folder = resolve_book(book, settings.book_dir, settings.library_dir)
    return load_settings(book_dir=folder, index_dir=getattr(args, "index", None),
                         embedder=getattr(args, "embedder", None), **extra)


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def terminal_progress(message: str, fraction: float) -> None:
    """A one-line progress bar on a terminal; silent when stderr is a file or pipe."""
    if not sys.stderr.isatty():
        return
    width = 30
    filled = int(width * max(0.0, min(1.0, fraction)))
    bar = "#" * filled + "." * (width - filled)
    sys.stderr.write(f"\r[{bar}] {fraction:4.0%} {message[:50]:<50}")
    if fraction >= 1.0:
        sys.stderr.write("\n")
    sys.stderr.flush()
