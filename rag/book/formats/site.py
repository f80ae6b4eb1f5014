"""A built site (mdBook, MkDocs, Sphinx, Docusaurus, Jekyll output) read as a book: each page a
chapter made of its main content only, in the order of the site's own table of contents.

BeautifulSoup (MIT, maintained, lenient on broken HTML the way browsers are) parses the pages;
html.parser is its builder because it closes XHTML's self-closing tags. What a site generator
puts around the text is found in `site_layout`; the Markdown is made in `html_markdown`.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass

from bs4 import BeautifulSoup

from rag.book.formats.base import (
    MAX_HTML_BYTES,
    MAX_PAGES,
    PAGE_NO_TEXT,
    PAGE_TOO_LARGE,
    ConvertedBook,
    ConvertedChapter,
    Problems,
    Unreadable,
    path_slug,
    unique_path,
)
from rag.book.formats.html_markdown import decode_html, parse_html, soup_to_markdown
from rag.book.formats.site_layout import (
    head_title,
    main_content,
    nav_links,
    og_site_name,
    page_title,
    site_name,
)
from rag.errors import InputError

MACHINERY = {"404.html", "search.html", "genindex.html", "py-modindex.html", "print.html",
             "toc.html", "sitemap.html", "searchindex.html"}  # generated, not written
MACHINERY_DIRS = {"_static", "_sources", "_modules", "_images", "_downloads", "search"}
SKIPPED_MACHINERY = "pages skipped as site machinery (search, index of terms, print view, 404)"
SKIPPED_REDIRECT = "pages skipped: redirects to another page"
SKIPPED_DUPLICATE = "pages skipped: the same text as another page (mdBook's index.html)"
REFRESH = re.compile(r"^refresh$", re.IGNORECASE)


@dataclass(frozen=True)
class _Page:
    path: str
    markdown: str
    heading: str  # the first <h1> of the main content
    head: str  # <title>


def _is_machinery(path: str) -> bool:
    parts = path.lower().split("/")
    return parts[-1] in MACHINERY or any(p in MACHINERY_DIRS for p in parts[:-1])


def _read_page(path: str, soup: BeautifulSoup, problems: Problems) -> _Page:
    refresh = soup.find("meta", attrs={"http-equiv": REFRESH})
    if refresh is not None and len(soup.get_text(" ", strip=True)) < 300:
        raise Unreadable(SKIPPED_REDIRECT)
    head = head_title(soup)
    main = main_content(soup)
    markdown = soup_to_markdown(main, soup, problems, path)
    if not markdown.strip():
        raise Unreadable(PAGE_NO_TEXT)
    h1 = main.find("h1")
    heading = " ".join(h1.get_text(" ").split()) if h1 is not None else ""
    return _Page(path, markdown, heading, head)


def _natural(path: str) -> list:
    return [int(p) if p.isdigit() else p.lower() for p in re.split(r"(\d+)", path)]


def _index_page(paths: list[str]) -> str | None:
    indexes = [p for p in paths if posixpath.basename(p) in ("index.html", "index.htm")]
    return min(indexes, key=lambda p: (p.count("/"), p)) if indexes else None


def read_html_site(pages: list[tuple[str, bytes]]) -> ConvertedBook:
    """Every readable page of a built site as a chapter; InputError when none is readable."""
    if not pages:
        raise InputError("The folder holds no .html pages: point Folio at the site's build "
                         "output (mdBook `book/`, MkDocs `site/`, Sphinx `_build/html`).")
    if len(pages) > MAX_PAGES:
        raise InputError(f"The site has {len(pages):,} pages, over the {MAX_PAGES:,} Folio "
                         "reads as one book: point it at one part of the site.")
    by_path = {posixpath.normpath(p.replace("\\", "/")).lstrip("/"): raw for p, raw in pages}
    chapters = {p for p in by_path if not _is_machinery(p)}
    problems, read, nav, og = Problems(), {}, [], ""
    index = _index_page(sorted(chapters))
    for path in sorted(by_path, key=lambda p: (p != index, _natural(p))):
        if path not in chapters and posixpath.basename(path) != "toc.html":
            problems.add(SKIPPED_MACHINERY, path)
            continue
        try:
            if len(by_path[path]) > MAX_HTML_BYTES:
                raise Unreadable(PAGE_TOO_LARGE)
            soup = parse_html(decode_html(by_path[path]), path)
            if len(nav) < len(chapters) / 2:  # every page repeats the sidebar: stop once found
                links = nav_links(path, soup, chapters)
                nav = links if len(links) > len(nav) else nav
            og = og or og_site_name(soup)
            if path not in chapters:
                problems.add(SKIPPED_MACHINERY, path)
                continue
            read[path] = _read_page(path, soup, problems)
        except Unreadable as e:
            problems.add(str(e), path)
    if not read:
        raise InputError("No page of the site has text Folio can read: "
                         + "; ".join(problems.lines()))
    return _assemble(read, nav, index, og, problems)


def _assemble(read: dict[str, _Page], nav: list[tuple[str, str]], index: str | None, og: str,
              problems: Problems) -> ConvertedBook:
    """Chapters in contents order (the index first when the contents leave it out, then pages
    the contents do not list, in path order), copies dropped, titles from the page's <h1>."""
    nav_text = dict(nav)
    in_nav = [p for p, _ in nav if p in read]
    rest = sorted(set(read) - set(in_nav), key=_natural)
    head = [index] if index in rest else []
    rest = [p for p in rest if p not in head]
    seen: set[str] = set()
    for path in [*in_nav, *head, *rest]:  # a page the contents lists wins over its copy
        digest = hashlib.sha256(read[path].markdown.encode()).hexdigest()
        if digest in seen:
            problems.add(SKIPPED_DUPLICATE, path)
            del read[path]
        seen.add(digest)
    site = og or site_name([page.head for page in read.values()])
    taken: set[str] = set()
    chapters = []
    for n, path in enumerate([p for p in [*head, *in_nav, *rest] if p in read], 1):
        page = read[path]
        slug = re.sub(r"(^|/)index$", "", path_slug(path)) or "index"
        title = page.heading or nav_text.get(path, "") or page_title(page.head, site)
        chapters.append(ConvertedChapter(unique_path(slug, taken, f"page-{n}"), title,
                                         page.markdown))
    first = read.get(index or "") or read[next(iter(read))]
    return ConvertedBook(site or first.head or first.heading, chapters, problems.lines())
