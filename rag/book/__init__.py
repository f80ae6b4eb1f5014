"""Stage 0, the book: a folder of Markdown/MDX chapters parsed into sections with stable IDs
(`parse`), and sections cut into embedder-sized chunks (`chunk`)."""

from __future__ import annotations

from rag.book.chunk import ChunkerSettings, chunk_book
from rag.book.parse import Book, BookReport, parse_book

__all__ = [
    "Book", "BookReport", "ChunkerSettings", "chunk_book", "parse_book"
]
