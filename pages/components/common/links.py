"""Where a citation link points when rendered: the published book, or the in-app reader.

Citations keep the template URL (`{base_url}/docs/{module}/{chapter}#{section}`); with no
published site (base_url empty) that URL is relative and would hit the Streamlit server, so the
pages render it as a link to the Book page instead. No streamlit import: pure and testable."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import quote, urlencode

READER_PATH = "book"  # the url_path st.navigation gives pages/book.py


def reader_href(url: str, module_id: str, chapter_id: str, section_id: str,
                base_url: str) -> str:
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
    # Relative to the current page's folder: /chat -> /book, /prefix/chat -> /prefix/book.
    return f"{READER_PATH}?{urlencode(params)}{fragment}"


def citation_href(citation: Mapping, base_url: str | None) -> str:
    """reader_href for a citation dict (Response/audit form); base_url None keeps the URL."""
    url = citation.get("url") or ""
    if base_url is None:
        return url
    return reader_href(url, citation.get("module_id") or "", citation.get("chapter_id") or "",
                       citation.get("section_id") or "", base_url)
