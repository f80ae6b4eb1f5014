"""Heading ids as each renderer computes them (rag.book.slugs), checked against what the
renderers themselves produce, and against the books' own links to their headings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.book.parse import parse_book, read_meta
from rag.book.slugs import GITHUB, MDBOOK, MKDOCS, SPHINX, Slugger, slugify
from tests.builders import shared_path


@pytest.mark.parametrize(("style", "heading", "slug"), [
    # github-slugger (GitHub, Docusaurus): punctuation out, every space a '-', '_' kept
    (GITHUB, "Getting Started", "getting-started"),
    (GITHUB, "What's new in v2?", "whats-new-in-v2"),
    (GITHUB, "PID: tuning & anti-windup", "pid-tuning--anti-windup"),
    (GITHUB, "Ünïcode façade", "ünïcode-façade"),
    (GITHUB, "Snake_case name", "snake_case-name"),
    (GITHUB, "C++ (and C#)", "c-and-c"),
    # mdBook's normalize_id: ASCII lower case only, whitespace a '-', '_' and '-' kept
    (MDBOOK, "Hello, World!", "hello-world"),
    (MDBOOK, "Storing Values with Variables", "storing-values-with-variables"),
    (MDBOOK, "Snake_case name", "snake_case-name"),
    (MDBOOK, "Ünïcode façade", "Ünïcode-façade"),
    # Python-Markdown's toc (MkDocs): to ASCII, runs of spaces and '-' one '-'
    (MKDOCS, "PID: tuning & anti-windup", "pid-tuning-anti-windup"),
    (MKDOCS, "Ünïcode façade", "unicode-facade"),
    (MKDOCS, "Use the `response_model` parameter", "use-the-response_model-parameter"),
    # docutils' make_id (Sphinx, Jupyter Book, d2l): [a-z0-9] runs, leading digits dropped
    (SPHINX, "Linear Regression", "linear-regression"),
    (SPHINX, "Snake_case name", "snake-case-name"),
    (SPHINX, "3D Vision", "d-vision"),
    (SPHINX, "Ünïcode façade", "unicode-facade"),
])
def test_each_renderer_slugs_as_it_does(style: str, heading: str, slug: str) -> None:
    assert slugify(heading, style) == slug


@pytest.mark.parametrize(("style", "repeats"), [
    (GITHUB, ["setup", "setup-1", "setup-2"]),
    (MDBOOK, ["setup", "setup-1", "setup-2"]),
    (MKDOCS, ["setup", "setup_1", "setup_2"]),
    (SPHINX, ["setup", "id1", "id2"]),
])
def test_repeated_headings_get_each_renderers_suffix(style: str, repeats: list[str]) -> None:
    slugger = Slugger(style)
    assert [slugger.slug("Setup") for _ in range(3)] == repeats


def test_a_derived_id_never_takes_one_an_author_wrote() -> None:
    slugger = Slugger(GITHUB, taken={"install"})
    assert slugger.slug("Install") == "install-1"


def _section_ids(root: Path) -> dict[str, set[str]]:
    ids: dict[str, set[str]] = {}
    for s in parse_book(root).sections:
        ids.setdefault(s.source_path, set()).add(s.section_id)
    return ids


def test_docusaurus_book_links_land_on_its_sections() -> None:
    """The Physical AI book's own links to its headings ("](#node-and-communication-issues)")
    name ids Folio derives: a citation builds the URL fragment the site has."""
    book = shared_path("physical-ai-book")
    ids, docs = _section_ids(book), book / "docs"
    links = [(f.relative_to(docs).as_posix(), m.group(1)) for f in docs.rglob("*.md")
             for m in re.finditer(r"\]\(#([^)\s]+)\)", f.read_text(encoding="utf-8"))]
    assert len(links) >= 5 and all(frag in ids[path] for path, frag in links)


def test_jekyll_book_subnav_anchors_are_its_section_ids() -> None:
    """The 18F Content Guide lists each page's headings in its frontmatter (`subnav: href:
    '#how-to-recognize-the-passive-voice'`): ids its Jekyll site has."""
    book = shared_path("content-guide")
    ids, docs = _section_ids(book), book / "docs"
    links = [(f.relative_to(docs).as_posix(), str(item["href"])[1:])
             for f in docs.rglob("*.md")
             for item in read_meta(f.read_bytes())[0].get("subnav") or []
             if str(item.get("href", "")).startswith("#")]
    assert len(links) >= 40
    missing = [link for link in links if link[1] not in ids[link[0]]]
    assert not missing


def test_mkdocs_book_links_to_its_own_site_land_on_sections() -> None:
    """FastAPI's pages link to each other by absolute URL with a fragment; most of those
    fragments are explicit `{ #id }` ids, the rest derived as Python-Markdown does. A few point
    at headings renamed since: at least 70 % must resolve (today 67 of 89)."""
    book = shared_path("fastapi-docs")
    ids, docs = _section_ids(book), book / "docs"
    links = []
    for f in docs.rglob("*.md"):
        for m in re.finditer(r"https://fastapi\.tiangolo\.com/([^)#\s]*?)/?#([^)\s]+)\)",
                             f.read_text(encoding="utf-8")):
            path = m.group(1).strip("/")
            target = next((c for c in (f"{path}.md", f"{path}/index.md") if (docs / c).is_file()),
                          "index.md" if not path else None)
            if target:
                links.append((target, m.group(2)))
    found = sum(frag in ids.get(path, set()) for path, frag in links)
    assert len(links) >= 50 and found / len(links) >= 0.7
