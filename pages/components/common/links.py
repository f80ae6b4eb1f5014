"""Where a citation link points when rendered: the published book, or the in-app reader.

Citations keep the template URL (`{base_url}/docs/{module}/{chapter}#{section}`); with no
published site (base_url empty) that URL is relative and would hit the Streamlit server, so the
pages render it as a link to the Book page instead. A reader link names the book it points into
(`book=<id>`), so the Book page can tell a citation of another book from one of its own instead
of opening a wrong chapter. No streamlit import: pure and testable."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, urlencode

READER_PATH = "book"  # the url_path st.navigation gives pages/book.py
BOOK_PARAM = "book"


def reader_href(url: str, module_id: str, chapter_id: str, section_id: str,
                base_url: str, book_id: str = "") -> str:
    """The href to render for `url`: unchanged with a base_url, else the reader page.

    A URL without a fragment (an unstable section links to its chapter root) opens the chapter
    without a section. An empty URL (no book section to link to) stays empty."""
    if not url or (base_url or "").strip():
        return url
    params = {"module": module_id, "chapter": chapter_id}
    fragment = ""
    if section_id and "#" in url:
        params["section"] = section_id
        fragment = "#" + quote(section_id, safe="")  # the reader's heading anchor scrolls here
    if book_id:
        params[BOOK_PARAM] = book_id
    # Relative to the current page's folder: /chat -> /book, /prefix/chat -> /prefix/book.
    return f"{READER_PATH}?{urlencode(params)}{fragment}"


def citation_href(citation: Mapping, base_url: str | None) -> str:
    """reader_href for a citation dict (Response/audit form); base_url None keeps the URL."""
    url = citation.get("url") or ""
    if base_url is None:
        return url
    return reader_href(url, citation.get("module_id") or "", citation.get("chapter_id") or "",
                       citation.get("section_id") or "", base_url,
                       str(citation.get("book_id") or ""))


def link_problem(params: Mapping[str, str], chapters: Mapping[str, object], book_id: str,
                 title: str, other_title: str = "") -> str:
    """Why a reader link cannot open what it cites in this book ("" when it can): it names
    another book, or a chapter this book does not have. other_title: that book's title, when
    known (the audit log remembers it)."""
    linked_book = params.get(BOOK_PARAM, "")
    if linked_book and linked_book != book_id:
        other = other_title or linked_book
        return (f"This citation is from another book ({other}), not from {title}, the book "
                f"Folio is reading now, so it is not opened here. To read it, run Folio with "
                f"that book (RAG_BOOK) or open its published site.")
    module, chapter = params.get("module", ""), params.get("chapter", "")
    if (module or chapter) and f"{module}/{chapter}" not in chapters:
        section = f"#{params['section']}" if params.get("section") else ""
        return (f"The cited chapter `{module}/{chapter}{section}` is not in {title}: it was "
                f"renamed or removed, or the citation is from another book, so no chapter "
                f"is opened in its place.")
    return ""
