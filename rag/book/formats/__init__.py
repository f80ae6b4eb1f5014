"""Book files that are not Markdown, converted to Markdown chapters the Markdown reader parses:
Word documents (`read_docx`), EPUB 2/3 (`read_epub`) and built HTML sites (`read_html_site`),
plus the HTML-to-Markdown step they share (`html_to_markdown`, also for raw HTML in Markdown).

Each returns a `ConvertedBook`: the title from the book's metadata, chapters in reading order
with stable paths and titles, and what could not be interpreted, counted per kind. A file that
cannot be read at all raises `InputError` with what to do; limits bound every input's cost.
"""

from __future__ import annotations

from rag.book.formats.base import ConvertedBook, ConvertedChapter
from rag.book.formats.docx import read_docx
from rag.book.formats.epub import read_epub
from rag.book.formats.html_markdown import html_to_markdown
from rag.book.formats.site import read_html_site

__all__ = ["ConvertedBook", "ConvertedChapter", "html_to_markdown", "read_docx", "read_epub",
           "read_html_site"]
