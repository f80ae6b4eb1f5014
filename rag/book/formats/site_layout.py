"""Where a built site keeps its text, its table of contents and its name.

Built with what mdBook, MkDocs (Material), Sphinx (alabaster, Read the Docs, Furo), Docusaurus
and Jekyll actually write: the text sits in `[role=main]`, `<main>` or a lone `<article>`; the
table of contents is the navigation element with the most links to the site's own pages (on any
page: Docusaurus's home page has none, and mdBook since 0.4.41 keeps it in `toc.html`); the
site's name is `og:site_name` or the part every page's `<title>` shares.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter
from urllib.parse import unquote, urlsplit

from bs4 import BeautifulSoup, Tag

CHROME_TOKEN = re.compile(
    r"(?:^|[-_])(?:sidebar|toc|toctree|tableofcontents|table-of-contents|breadcrumbs?|"
    r"pagination|pager|navbar|nav|navigation|menu|menu-bar|edit-?this-?page|edit-?link|"
    r"feedback|footer|skip-?link|prev-?next|source-?file|last-?updated)(?:$|[-_])")
EDIT_LINK = re.compile(r"edit (?:this )?page|view (?:page )?source|suggest (?:an )?edit|"
                       r"improve this page|edit on (?:github|gitlab)|report an issue",
                       re.IGNORECASE)
NAV_ROLES = ("navigation", "contentinfo", "search")
PAGE_ROLES = ("banner", "complementary")
NAV_HINT = re.compile(r"sidebar|toc|summary|menu|nav|chapter", re.IGNORECASE)
TITLE_SEPARATOR = re.compile(r"(?<!\s)\s++[|–—·»:-]\s+")  # possessive: linear on spaces


def main_content(soup: BeautifulSoup) -> Tag:
    """The element holding the page's own text, with the site's chrome taken out of it."""
    body = soup.body or soup
    total = len(body.get_text(" ", strip=True))
    articles = body.find_all("article")
    for found in (body.find(attrs={"role": "main"}), body.find("main"),
                  articles[0] if len(articles) == 1 else None):
        if found is not None and len(found.get_text(" ", strip=True)) >= 0.2 * total:
            _strip_chrome(found, whole_page=False)
            return found
    _strip_chrome(body, whole_page=True)
    return body


def _strip_chrome(root: Tag, whole_page: bool) -> None:
    text_size = len(root.get_text(" ", strip=True)) or 1
    marked, stack = [], [root]
    while stack:
        for child in stack.pop().children:
            if not isinstance(child, Tag):
                continue
            if _is_chrome(child, whole_page) and \
                    len(child.get_text(" ", strip=True)) <= 0.5 * text_size:
                marked.append(child)  # never the text itself, however it is labelled
            else:
                stack.append(child)
    for tag in marked:
        tag.extract()


def _is_chrome(tag: Tag, whole_page: bool) -> bool:
    role = str(tag.get("role") or "").lower()
    if tag.name in ("nav", "footer") or role in NAV_ROLES:
        return True
    if whole_page and (tag.name in ("header", "aside") or role in PAGE_ROLES):
        return True
    tokens = [c.lower() for c in tag.get("class") or []] + [str(tag.get("id") or "").lower()]
    if any(CHROME_TOKEN.search(t) for t in tokens if t):
        return True
    label = " ".join(str(tag.get(a) or "") for a in ("title", "aria-label"))
    return tag.name == "a" and bool(EDIT_LINK.search(f"{label} {tag.get_text(' ')}"))


def resolve_link(href: str, source: str, pages: set[str]) -> str | None:
    """The site page a link from `source` points at, or None (external, missing, an asset)."""
    parts = urlsplit(href.strip())
    if parts.scheme or parts.netloc or not (parts.path or "").strip():
        return None
    path = unquote(parts.path)
    if path.startswith("/"):  # site-root relative; the site may live under a base path
        segments = path.strip("/").split("/")
        tries = ["/".join(segments[i:]) for i in range(len(segments))] or [""]
    else:
        tries = [posixpath.normpath(posixpath.join(posixpath.dirname(source), path))]
    for base in tries:
        base = "" if base in (".", "") else base.strip("/")
        for candidate in (base, f"{base}/index.html".lstrip("/"), f"{base}.html"):
            if candidate in pages:
                return candidate
    return None


def nav_links(source: str, soup: BeautifulSoup, pages: set[str]) -> list[tuple[str, str]]:
    """(page, link text) in the order of the page's table of contents: its navigation-like
    element linking the most site pages; [] when none links two."""
    candidates = soup.find_all(lambda t: t.name in ("nav", "aside")
                               or t.get("role") == "navigation"
                               or any(NAV_HINT.search(c) for c in t.get("class") or [])
                               or bool(NAV_HINT.search(str(t.get("id") or ""))))
    if posixpath.basename(source) == "toc.html" and soup.body is not None:
        candidates.append(soup.body)  # mdBook's toc.html is nothing but the contents
    best: list[tuple[str, str]] = []
    for candidate in candidates:
        links, seen = [], set()
        for a in candidate.find_all("a", href=True):
            target = resolve_link(str(a["href"]), source, pages)
            if target is not None and target not in seen:
                seen.add(target)
                links.append((target, " ".join(a.get_text(" ").split())))
        if len(links) > len(best):
            best = links
    return best if len(best) >= 2 else []


def head_title(soup: BeautifulSoup) -> str:
    title = soup.title.get_text(" ") if soup.title is not None else ""
    return " ".join(title.split())


def og_site_name(soup: BeautifulSoup) -> str:
    meta = soup.find("meta", attrs={"property": "og:site_name"})
    return " ".join(str(meta.get("content") or "").split()) if meta is not None else ""


def site_name(titles: list[str]) -> str:
    """The first or last part of `<title>` that most pages share ("Loops - The Book")."""
    counts: Counter[str] = Counter()
    for title in titles:
        parts = TITLE_SEPARATOR.split(title)
        if len(parts) > 1:
            counts.update({parts[0], parts[-1]})
    if counts:
        name, count = counts.most_common(1)[0]
        if count >= 2 and count > len(titles) / 2:
            return name
    return ""


def page_title(title: str, site: str) -> str:
    """A page's `<title>` without the site's name."""
    if not site:
        return title
    parts = [p for p in TITLE_SEPARATOR.split(title) if p != site]
    return " - ".join(parts) if parts else title
