"""EPUB books (rag.book.formats.epub): EPUB 3 written by ebooklib and EPUB 2 assembled by hand at
test time, read in spine order with titles from the table of contents; DRM, damaged packages and
XML bombs refused with what to do, chapter-level damage reported while the rest converts."""

from __future__ import annotations

import io
import warnings

import pytest
from ebooklib import epub as ebooklib_epub

from rag.book.formats import archive, base, epub, read_epub
from rag.errors import InputError
from tests.builders import (
    HANDBOOK,
    HANDBOOK_TITLE,
    epub_bytes,
    handbook_chapter_html,
    handbook_epub,
    zip_bytes,
)

CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
             'opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" '
             'media-type="application/oebps-package+xml"/></rootfiles></container>')


def xhtml(body: str, head: str = '<?xml version="1.0" encoding="utf-8"?>') -> str:
    return (f'{head}<!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><title>x'
            f"</title></head><body>{body}</body></html>")


def epub2(chapters: dict[str, str | bytes | None], spine: list[str], extra: dict | None = None,
          labels: list[str] | None = None) -> bytes:
    """An EPUB 2: OPF and NCX under OEBPS/, chapters (href -> XHTML, None: left out of the
    archive) in `spine` order, the NCX labelling them `labels` (default "Part 1", "Part 2" ...)."""
    labels = labels or [f"Part {n + 1}" for n in range(len(spine))]
    items = "".join(f'<item id="i{n}" href="{href}" media-type="'
                    f'{"image/svg+xml" if href.endswith(".svg") else "application/xhtml+xml"}"/>'
                    for n, href in enumerate(chapters))
    linear = {h: ' linear="no"' if h.startswith("notes") else "" for h in spine}
    refs = "".join(f'<itemref idref="i{list(chapters).index(h)}"{linear[h]}/>' for h in spine)
    points = "".join(f'<navPoint id="p{n}"><navLabel><text>{labels[n]}</text></navLabel>'
                     f'<content src="{href}#top"/></navPoint>' for n, href in enumerate(spine))
    opf = (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="2.0">'
           f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Old Book</dc:title>'
           f'</metadata><manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx'
           f'+xml"/>{items}</manifest><spine toc="ncx">{refs}</spine></package>')
    ncx = (f'<?xml version="1.0"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version='
           f'"2005-1"><navMap>{points}</navMap></ncx>')
    files = {"mimetype": "application/epub+zip", "META-INF/container.xml": CONTAINER,
             "OEBPS/content.opf": opf, "OEBPS/toc.ncx": ncx, **(extra or {})}
    files.update({f"OEBPS/{href.replace('%20', ' ')}": body for href, body in chapters.items()
                  if body is not None})
    return zip_bytes(files)


def test_a_realistic_book_reads_in_spine_order_with_its_toc_titles():
    book = read_epub(handbook_epub(), "handbook.epub")
    assert book.title == HANDBOOK_TITLE
    assert book.problems == []
    assert [(c.path, c.title) for c in book.chapters] == [
        (f"text/{cid}", title) for title, cid, _ in HANDBOOK]
    assert book.chapters[1].markdown.startswith(
        "# Brakes {#brakes}\n\n## Rim Brakes {#rim-brakes}\n\n"
        "Rim brakes squeeze the wheel rim between two rubber pads.\n\n")
    assert book.chapters[2].markdown.endswith(
        "## Chain Wear {#chain-wear}\n\n"
        "A chain stretches as its pins wear, about 0.5 mm per 100 links a year.\n\n"
        "Replace a chain at 0.75 percent wear to spare the cassette.\n\n"
        "```python\ndef gear_ratio(front: int, rear: int) -> float:\n    return front / rear\n"
        "```\n")


def test_spine_and_titles_agree_with_ebooklib_reading_the_same_file():
    raw = epub_bytes([(f"c/{n}.xhtml", f"Heading {n}", f"<h1>Heading {n}</h1><p>Text {n}.</p>")
                      for n in (3, 1, 2)], toc_titles=["Third", "First", "Second"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oracle = ebooklib_epub.read_epub(io.BytesIO(raw), {"ignore_ncx": True})
    spine = [oracle.get_item_with_id(idref).file_name for idref, _ in oracle.spine]
    expected = [(f.removesuffix(".xhtml"), link.title)
                for f, link in zip(spine[1:], oracle.toc, strict=True)]  # [0] is the nav
    book = read_epub(raw, "oracle.epub")
    assert [(c.path, c.title) for c in book.chapters] == expected == [
        ("c/3", "Third"), ("c/1", "First"), ("c/2", "Second")]


def test_an_epub2_with_an_ncx_reads_and_reports_what_it_skipped():
    chapters = {
        "cover.xhtml": xhtml('<div><img src="cover.jpg" alt="cover"/></div>'),
        "Text/Chapter%201.xhtml": xhtml('<h2 id="top">One</h2><p>First <a id="p1"/>page.</p>'),
        "Text/latin.xhtml": xhtml("<h2>Two</h2><p>Caf\xe9 au lait.</p>",
                                  '<?xml version="1.0" encoding="windows-1252"?>').encode(
                                      "cp1252"),
        "Text/broken.xhtml": "<p>Caf\xe9</p>".encode("cp1252"),
        "plate.svg": "<svg/>",
        "Text/missing.xhtml": None,
        "notes.xhtml": xhtml("<h2>Notes</h2><p>A note.</p>"),
    }
    raw = epub2(chapters, spine=list(chapters))
    book = read_epub(raw, "old.epub")
    assert book.title == "Old Book"
    assert [(c.path, c.title) for c in book.chapters] == [
        ("text/chapter-1", "Part 2"), ("text/latin", "Part 3"), ("notes", "Part 7")]
    assert book.chapters[0].markdown == "## One {#top}\n\nFirst page.\n"
    assert book.chapters[1].markdown == "## Two\n\nCafé au lait.\n"
    assert book.problems == [
        f"{base.IMAGE}: 1 (in cover.xhtml)", f"{base.PAGE_NO_TEXT}: 1 (in cover.xhtml)",
        f"{base.PAGE_NOT_UTF8}: 1 (in Text/broken.xhtml)", f"{epub.NOT_XHTML}: 1 (in plate.svg)",
        f"{epub.MISSING}: 1 (in Text/missing.xhtml)"]


def test_fonts_obfuscated_by_the_epub_standard_are_no_drm():
    encryption = ('<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" xmlns:enc='
                  '"http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:EncryptionMethod '
                  'Algorithm="http://www.idpf.org/2008/embedding"/><enc:CipherData><enc:'
                  'CipherReference URI="OEBPS/font.otf"/></enc:CipherData></enc:EncryptedData>'
                  '</encryption>')
    raw = epub2({"a.xhtml": xhtml("<p>Readable.</p>")}, ["a.xhtml"],
                extra={"META-INF/encryption.xml": encryption})
    assert read_epub(raw, "fonts.epub").chapters[0].markdown == "Readable.\n"


DRM_ADVICE = "Folio cannot read it. Use a DRM-free copy of the book (many publishers sell them)."


@pytest.mark.parametrize("extra, scheme", [
    ({"META-INF/rights.xml": "<rights/>"}, "is protected by Adobe DRM"),
    ({"META-INF/sinf.xml": "<sinf/>"}, "is protected by Apple FairPlay DRM"),
    ({"META-INF/encryption.xml": '<encryption xmlns:enc="http://www.w3.org/2001/04/xmlenc#">'
      '<enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#'
      'aes128-cbc"/></enc:EncryptedData></encryption>'}, "is encrypted (DRM)"),
])
def test_drm_protected_books_are_refused_with_what_to_do(extra, scheme):
    raw = epub2({"a.xhtml": xhtml("<p>Locked.</p>")}, ["a.xhtml"], extra=extra)
    with pytest.raises(InputError) as e:
        read_epub(raw, "locked.epub")
    assert str(e.value) == f"locked.epub {scheme}: {DRM_ADVICE}"


BOMB_OPF = ('<?xml version="1.0"?><!DOCTYPE package [<!ENTITY a "aaaaaaaaaa">'
            + "".join(f'<!ENTITY {chr(98 + n)} "{("&" + chr(97 + n) + ";") * 10}">'
                      for n in range(9))
            + ']><package xmlns="http://www.idpf.org/2007/opf"><metadata><title>&j;</title>'
              "</metadata></package>")


@pytest.mark.parametrize("raw, message", [
    (b"not a zip", r"^bad\.epub is not an EPUB: it is not a zip archive\."),
    (zip_bytes({"mimetype": "application/epub+zip"}),
     r"^bad\.epub is not a complete EPUB: META-INF/container\.xml is missing\. Export it again"),
    (zip_bytes({"META-INF/container.xml": "<container/>"}),
     r"^bad\.epub: META-INF/container\.xml names no package document \(\.opf\): export"),
    (zip_bytes({"META-INF/container.xml": CONTAINER, "OEBPS/content.opf": "<package><oops>"}),
     r"^bad\.epub: OEBPS/content\.opf is not well-formed XML \(.+\): export the book again"),
    (zip_bytes({"META-INF/container.xml": CONTAINER, "OEBPS/content.opf": BOMB_OPF}),
     r"^bad\.epub: OEBPS/content\.opf is not well-formed XML \(limit on input amplification"),
    (epub2({}, []), r"^bad\.epub has an empty spine \(no reading order\): export it again"),
    (epub2({"a.xhtml": None}, ["a.xhtml"]),
     r"^bad\.epub has no chapter with text Folio can read: chapters missing from the archive"),
])
def test_damaged_packages_are_refused_with_what_to_do(raw, message):
    with pytest.raises(InputError, match=message):
        read_epub(raw, "bad.epub")


def test_archive_limits_apply_to_epubs(monkeypatch):
    monkeypatch.setattr(archive, "MAX_ENTRIES", 3)
    with pytest.raises(InputError, match=r"^big\.epub holds \d+ files, over the 3 an EPUB may"):
        read_epub(handbook_epub(), "big.epub")


def test_a_chapter_without_toc_entry_is_titled_from_its_first_heading():
    raw = epub2({"a.xhtml": xhtml(handbook_chapter_html(0))}, ["a.xhtml"], labels=[" "])
    assert read_epub(raw, "x.epub").chapters[0].title == "Tyres and Tubes"
