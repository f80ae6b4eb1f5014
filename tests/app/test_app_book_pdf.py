"""The Book page for a mixed book (Markdown + a PDF printed by Chromium at test time): a PDF
section shows its pages and their text, a Markdown chapter's relative links open the chapter
they name in the reader (or stay plain text), never Streamlit's "Page not found"."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from pages.components.book.text import (
    link_targets,
    pages_caption,
    pdf_markdown,
    pdf_pages,
    resolve_href,
    resolve_links,
)
from rag.book.parse import parse_book
from rag.config import load_settings
from tests.builders import (
    BALANCE_HTML,
    ask,
    chromium,
    markdown_text,
    open_app,
    open_book_page,
    print_pdf,
    shared_path,
    streamlit_app,
)

ARTIFACTS = Path(__file__).parent / "artifacts"
# With markdown-looking text, which the Book page must show as it is.
BALANCE = BALANCE_HTML.replace("over its edge.</p>",
                               "over its edge. Costs 5 * 2 = 10 #units_of_effort [sic].</p>")
INTRO = """---
title: Walking
---

## Why Walk {#why}

Read [balance control](./balance) and [the capture point](./balance.pdf#capture-point), then
[the gait cycle](../gait/cycle.md) and [this section](/docs/walking/intro#why). There is no
[missing chapter](./no-such-chapter) and no [way out](../../outside). ![Wiring](./img/wiring.png)
[Folio](https://example.org/folio) is outside. `[code](./balance)` stays code.

```text
[in a block](./balance)
```
"""
CYCLE = "## Cycle {#cycle}\n\nThe gait cycle has a stance phase and a swing phase.\n"


@pytest.fixture(scope="module")
def pdf_book(tmp_path_factory) -> Path:
    book = tmp_path_factory.mktemp("pdf-book") / "walking-book"
    (book / "walking").mkdir(parents=True)
    (book / "gait").mkdir()
    print_pdf(BALANCE, book / "walking" / "balance.pdf")
    (book / "walking" / "intro.md").write_text(INTRO)
    (book / "gait" / "cycle.md").write_text(CYCLE)
    return book


@pytest.fixture(scope="module")
def targets(pdf_book: Path) -> dict:
    return link_targets(parse_book(pdf_book).sections)


# -- links and page text, pure ------------------------------------------------------------------

@pytest.mark.parametrize(("href", "expected"), [
    ("./balance", "book?module=walking&chapter=balance"),
    ("balance.pdf#capture-point",
     "book?module=walking&chapter=balance&section=capture-point#capture-point"),
    ("./balance#no-such-section", "book?module=walking&chapter=balance"),
    ("../gait/cycle.md", "book?module=gait&chapter=cycle"),
    ("../gait/cycle.mdx?x=1#cycle", "book?module=gait&chapter=cycle&section=cycle#cycle"),
    ("../gait/cycle#cycle", "book?module=gait&chapter=cycle&section=cycle#cycle"),
    ("/docs/gait/cycle", "book?module=gait&chapter=cycle"),
    ("#why", "book?module=walking&chapter=intro&section=why#why"),
    ("./no-such-chapter", None),
    ("../../outside", None),
    ("https://example.org/a", "https://example.org/a"),
    ("mailto:author@example.org", "mailto:author@example.org"),
])
def test_book_links_resolve_to_the_reader(targets: dict, href: str, expected: str | None) -> None:
    assert resolve_href(href, "walking/intro.md", targets) == expected


def test_a_chapter_renders_its_links_for_the_reader(targets: dict) -> None:
    body = INTRO.split("---\n", 2)[2]
    out = resolve_links(body, "walking/intro.md", targets)
    assert "Read [balance control](book?module=walking&chapter=balance) and " in out
    assert ("[the capture point](book?module=walking&chapter=balance&section=capture-point"
            "#capture-point)") in out
    assert "[the gait cycle](book?module=gait&chapter=cycle)" in out
    assert "There is no\nmissing chapter and no way out. *(Wiring)*" in out
    assert "[Folio](https://example.org/folio)" in out
    assert "`[code](./balance)` stays code" in out and "[in a block](./balance)" in out


def test_every_relative_link_of_the_real_book_opens_a_chapter() -> None:
    book = parse_book(shared_path("physical-ai-book"))
    targets = link_targets(book.sections)
    found = 0
    for s in book.sections:
        rendered = resolve_links(s.text, s.source_path, targets)
        for href in ("](./", "](../", "](/docs", "](#"):
            assert href not in rendered, (s.source_path, href)
        found += rendered.count("](book?module=")
    assert found >= 60  # e.g. ./hardware-requirements, ../setup/software-setup, ./x.md, #faq


def test_pdf_text_is_shown_as_printed_page_by_page(pdf_book: Path) -> None:
    zmp = next(s for s in parse_book(pdf_book).sections if s.section_id == "zero-moment-point")
    assert pages_caption(zmp) == "Pages 1–2 of balance.pdf"
    [(first, _), (second, text)] = pdf_pages(zmp)
    assert (first, second) == (1, 2)
    assert text.startswith("The zero moment point must stay inside")
    shown = pdf_markdown("1. Costs 5 * 2 = 10 #units_of_effort [sic] $3 :smile:\n- a bullet")
    assert shown == ("1\\. Costs 5 \\* 2 = 10 \\#units\\_of\\_effort \\[sic\\] \\$3 \\:smile\\:"
                     "\n- a bullet")


# -- the Book page through AppTest --------------------------------------------------------------

@pytest.fixture(scope="module")
def app_dirs(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("pdf-app")
    return work / "index", work / "audit.duckdb"


def open_book(monkeypatch, pdf_book: Path, app_dirs, **params: str):
    return open_book_page(monkeypatch, *app_dirs, {"RAG_BOOK": str(pdf_book)}, **params)


@pytest.mark.slow
def test_the_book_page_shows_a_pdf_sections_pages(monkeypatch, pdf_book: Path, app_dirs) -> None:
    at = open_book(monkeypatch, pdf_book, app_dirs, module="walking", chapter="balance",
                   section="zero-moment-point")
    assert at.selectbox(key="reader_chapter").value == "walking/balance"
    assert [h.value for h in at.subheader] == ["Balance Control", "Zero Moment Point",
                                               "Capture Point"]
    captions = [c.value for c in at.caption]
    assert ":material/description: Pages 1–2 of balance.pdf" in captions
    assert ":material/insert_page_break: page 2" in captions
    assert ":material/description: Page 2 of balance.pdf" in captions  # the capture point
    text = " ".join(markdown_text(at).replace("\\", "").split())
    assert "The zero moment point must stay inside the support polygon" in text
    assert "Costs 5 * 2 = 10 #units_of_effort [sic]." in text
    assert not at.warning and not at.error


@pytest.mark.slow
def test_the_book_page_points_relative_links_at_the_reader(monkeypatch, pdf_book: Path,
                                                           app_dirs) -> None:
    at = open_book(monkeypatch, pdf_book, app_dirs, module="walking", chapter="intro")
    text = markdown_text(at)
    assert "[balance control](book?module=walking&chapter=balance)" in text
    assert "[the gait cycle](book?module=gait&chapter=cycle)" in text
    assert "](./" not in text.replace("`[code](./balance)`", "").replace("(./balance)\n```", "")
    assert "missing chapter and no way out" in text


@pytest.mark.slow
def test_a_pdf_answer_cites_its_page(monkeypatch, pdf_book: Path, app_dirs) -> None:
    at = open_app(monkeypatch, *app_dirs, RAG_BOOK=str(pdf_book))
    ask(at, "Where must the zero moment point stay?")
    # the cited chunk runs over the page turn, so the source line gives both pages; it names
    # the section with its chapter
    assert re.search(r"\[[^\]›]+ › Zero Moment Point\]\(book\?module=walking&chapter=balance&"
                     r"section=zero-moment-point[^)]*\) · pages 1–2 —", markdown_text(at))


# -- in a browser: a click on a relative link lands on its chapter -----------------------------

@pytest.fixture(scope="module")
def server(pdf_book: Path, tmp_path_factory) -> Iterator[str]:
    chromium()
    with streamlit_app(tmp_path_factory.mktemp("pdf-browser"), RAG_BOOK=str(pdf_book)) as url:
        yield url


@pytest.mark.slow
@pytest.mark.browser
def test_clicking_a_relative_link_opens_its_chapter(server: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"])
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1100})
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{server}/book?module=walking&chapter=balance")
            page.get_by_text("Pages 1–2 of balance.pdf").wait_for(timeout=240_000)
            page.wait_for_timeout(800)
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "book_pdf.png"), full_page=True)

            page.goto(f"{server}/book?module=walking&chapter=intro")
            link = page.get_by_role("link", name="the capture point")
            link.wait_for(timeout=60_000)
            page.screenshot(path=str(ARTIFACTS / "book_links.png"), full_page=True)
            with context.expect_page() as opened:  # Streamlit opens links in a new tab
                link.click()
            target = opened.value
            target.get_by_role("heading", name="Capture Point").wait_for(timeout=60_000)
            assert "module=walking&chapter=balance&section=capture-point" in target.url
            assert target.get_by_text("Page not found").count() == 0
            assert page.get_by_role("link", name="missing chapter").count() == 0
            assert not errors, errors
        finally:
            browser.close()


# -- change keys: an edited PDF is seen as a book edit ------------------------------------------

def test_an_edited_pdf_changes_the_readers_and_the_sidebars_keys(tmp_path: Path,
                                                                 pdf_book: Path) -> None:
    from pages.components.book.reader import book_key
    from pages.components.common.shared import change_signature

    book = tmp_path / "book"
    shutil.copytree(pdf_book, book)
    settings = load_settings(env={}, book_dir=book, index_dir=tmp_path / "index",
                             audit_db=tmp_path / "audit.duckdb")
    key, signature = book_key(book), change_signature(settings)
    assert "balance.pdf" in key and signature[0] == 3  # two Markdown files and the PDF
    pdf = book / "walking" / "balance.pdf"
    os.utime(pdf, ns=(pdf.stat().st_atime_ns, pdf.stat().st_mtime_ns + 10**9))
    assert book_key(book) != key and change_signature(settings) != signature
    (book / "walking" / "gone.pdf").symlink_to(tmp_path / "nowhere.pdf")
    assert "gone.pdf:missing" in book_key(book)  # parse_book reports it; the page still opens
