"""PDF chapters: PDFs printed by Chromium at test time (no binary fixtures), read with their
outline or by font size, with real pages; scanned, locked, damaged and oversized files are
reported, never silently empty and never a traceback."""

from __future__ import annotations

import base64
import io
import re
import time
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject

from rag.book import pdf
from rag.book.chunk import split_paged_units
from rag.book.parse import parse_book
from tests.builders import print_pdf

STYLE = ("<style>body{font:12pt serif} h1{font-size:26pt} h2{font-size:19pt} "
         "h3{font-size:15pt} .turn{break-before:page}</style>")
CHAPTER = f"""<html><head><meta charset="utf-8"><title>Balance Notes</title>{STYLE}</head><body>
<h1>Balance Control</h1>
<p>Balance control keeps the centre of mass of a walking robot above its support polygon.</p>
<h2>Zero Moment Point</h2>
<p>The zero moment point is where the net ground reaction force acts on the sole.</p>
<p class="turn">The zero moment point must stay inside the support polygon, or the foot tips
over its edge.</p>
<h3>Measuring It</h3>
<p>Force sensors in each ankle measure the zero moment point a thousand times a second.</p>
<h2>Capture Point</h2>
<p>The capture point is where the robot must step to come to rest.</p>
<h2>Capture Point</h2>
<p>A second section with the same title gets an identifier of its own.</p>
</body></html>"""
SENTENCE = re.compile(r"Gait phase \d+ shifts the load from the heel towards the toe\.")
EXPECTED = [  # (section id, heading path below the chapter title, first page, last page)
    ("", (), 1, 1),
    ("zero-moment-point", ("Zero Moment Point",), 1, 2),
    ("measuring-it", ("Zero Moment Point", "Measuring It"), 2, 2),
    ("capture-point", ("Capture Point",), 2, 2),
    ("capture-point-1", ("Capture Point",), 2, 2),
]


def page(body: str, title: str = "Notes") -> str:
    return f'<html><head><meta charset="utf-8"><title>{title}</title>{STYLE}</head>' \
           f"<body>{body}</body></html>"


def png_data_uri() -> str:
    """A photo-like raster, as a scanner would produce."""
    from PIL import Image

    image = Image.radial_gradient("L").resize((400, 300))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def without_outline(source: Path, out: Path) -> Path:
    """The same pages with no bookmarks: headings must come from font sizes."""
    writer = PdfWriter()
    for p in PdfReader(source).pages:
        writer.add_page(p)
    writer.write(out)
    return out


def layout(book: Path) -> list[tuple]:
    return [(s.section_id, s.heading_path[1:], s.page, s.page_end)
            for s in parse_book(book).sections]


@pytest.fixture(scope="module")
def chapter_pdf(tmp_path_factory) -> Path:
    return print_pdf(CHAPTER, tmp_path_factory.mktemp("printed") / "balance.pdf")


def test_outline_gives_sections_with_their_real_pages(tmp_path: Path, chapter_pdf: Path) -> None:
    book = tmp_path / "book"
    (book / "walking").mkdir(parents=True)
    (book / "walking" / "balance.pdf").write_bytes(chapter_pdf.read_bytes())
    assert [e.title for e in PdfReader(chapter_pdf).outline if not isinstance(e, list)] == \
        ["Balance Control"]  # Chromium's bookmarks: the H1, with the H2s and H3 below it
    parsed = parse_book(book)
    assert parsed.report.skipped_files == [] and parsed.report.unstable_ids == 0
    assert layout(book) == EXPECTED
    sections = {s.section_id: s for s in parsed.sections}
    zmp = sections["zero-moment-point"]
    assert (zmp.module_id, zmp.chapter_id, zmp.chapter_title, zmp.source_path) == \
        ("walking", "balance", "Balance Control", "walking/balance.pdf")
    assert zmp.text.split("\n")[0] == ("The zero moment point is where the net ground reaction "
                                       "force acts on the sole.")
    assert zmp.text.split("\n")[-1] == "\x1fThe zero moment point must stay inside the support " \
                                       "polygon, or the foot tips over its edge."
    assert "Measuring It" not in zmp.text and "Balance Control" not in sections[""].text
    assert all(s.stable for s in parsed.sections)
    assert parsed.chapters["walking/balance"]["title"] == "Balance Control"


def test_without_outline_headings_come_from_font_sizes(tmp_path: Path,
                                                       chapter_pdf: Path) -> None:
    book = tmp_path / "book"
    (book / "walking").mkdir(parents=True)
    without_outline(chapter_pdf, book / "walking" / "balance.pdf")
    assert PdfReader(book / "walking" / "balance.pdf").outline == []
    assert layout(book) == EXPECTED
    chapter = pdf.read_pdf((book / "walking" / "balance.pdf").read_bytes(),
                           Path("walking/balance.pdf"), "walking", "balance")
    assert not chapter.from_outline and chapter.title == "Balance Control"


def test_a_section_over_three_pages_and_a_paragraph_split_by_a_page_turn(tmp_path: Path) -> None:
    words = " ".join(f"Gait phase {i} shifts the load from the heel towards the toe." for i in
                     range(150))
    html = page(f"<h2>Walking Cycle</h2><p>{words}</p><p>{words}</p><h2>Stopping</h2>"
                "<p>To stop, the robot places its swing foot under the capture point.</p>")
    print_pdf(html, tmp_path / "book" / "gait.pdf")
    sections = {s.section_id: s for s in parse_book(tmp_path / "book").sections}
    cycle = sections["walking-cycle"]
    assert cycle.page == 1 and cycle.page_end >= 3
    assert cycle.text.count("\x1f") == cycle.page_end - cycle.page
    # a sentence cut by a page turn is still one sentence, on both pages
    units = split_paged_units(cycle.text)
    assert len(units) == 300 and all(SENTENCE.fullmatch(u[0]) for u in units)
    assert [u[2] for u in units] == sorted(u[2] for u in units)
    assert units[-1][3] == cycle.page_end - cycle.page
    assert sections["stopping"].page == cycle.page_end


def test_a_scanned_pdf_is_reported_not_silently_empty(tmp_path: Path) -> None:
    book = tmp_path / "book"
    print_pdf(page(f'<img src="{png_data_uri()}" style="width:6in">'), book / "scan.pdf")
    print_pdf(page(""), book / "blank.pdf")
    print_pdf(page(f"<h1>Sensing</h1><h2>Sensors</h2><p>Encoders measure joint angles.</p>"
                   f'<div class="turn"><img src="{png_data_uri()}" style="width:6in"></div>'),
              book / "partly-scanned.pdf")
    parsed = parse_book(book)
    reasons = {f["path"]: f["reason"] for f in parsed.report.skipped_files}
    assert reasons["scan.pdf"].startswith("no text layer on any of its 1 page (a scanned PDF?)")
    assert "ocrmypdf" in reasons["scan.pdf"]
    assert reasons["blank.pdf"].startswith("no text layer on any of its 1 page")
    assert reasons["partly-scanned.pdf page 2"].startswith("images without a text layer")
    assert [(s.chapter_id, s.section_id, s.page) for s in parsed.sections] == \
        [("partly-scanned", "sensors", 1)]
    assert parsed.report.files == 1


def test_locked_and_damaged_pdfs_are_reported(tmp_path: Path, chapter_pdf: Path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    for name, user_password in (("locked.pdf", "secret"), ("owner-only.pdf", "")):
        writer = PdfWriter(clone_from=chapter_pdf)
        writer.encrypt(user_password=user_password, owner_password="owner",
                       algorithm="RC4-128")
        writer.write(book / name)
    raw = chapter_pdf.read_bytes()
    (book / "truncated.pdf").write_bytes(raw[: len(raw) // 2])
    (book / "notes.pdf").write_text("# Not a PDF\n\nMarkdown saved under the wrong name.\n")
    (book / "empty.pdf").write_bytes(b"")
    parsed = parse_book(book)  # no exception: every file has an outcome
    reasons = {f["path"]: f["reason"] for f in parsed.report.skipped_files}
    assert reasons["locked.pdf"].startswith("encrypted with a password; put a copy without")
    for name in ("truncated.pdf", "notes.pdf", "empty.pdf"):
        assert reasons[name].startswith("not a readable PDF ("), reasons[name]
    assert "owner-only.pdf" not in reasons  # opens without a password: read as usual
    assert {s.chapter_id for s in parsed.sections} == {"owner-only"}


def test_a_mixed_folder_reads_markdown_and_pdf_and_reports_a_clash(tmp_path: Path,
                                                                   chapter_pdf: Path) -> None:
    book = tmp_path / "book"
    (book / "walking").mkdir(parents=True)
    (book / "walking" / "intro.md").write_text(
        "---\ntitle: Walking\n---\n\n## Why Walk {#why}\n\nLegs cross rough ground.\n")
    (book / "walking" / "Balance Control.pdf").write_bytes(chapter_pdf.read_bytes())
    (book / "walking" / "intro.pdf").write_bytes(chapter_pdf.read_bytes())
    parsed = parse_book(book)
    assert set(parsed.chapters) == {"walking/intro", "walking/balance-control"}
    assert parsed.report.files == 2
    assert parsed.report.duplicates == [
        "walking/intro.pdf: chapter id 'intro' in module 'walking' is already used by "
        "walking/intro.md; this file was skipped"]
    kinds = {(s.chapter_id, s.page_end is not None) for s in parsed.sections}
    assert kinds == {("intro", False), ("balance-control", True)}


def test_an_edited_pdf_changes_the_content_hash(tmp_path: Path, chapter_pdf: Path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    (book / "balance.pdf").write_bytes(chapter_pdf.read_bytes())
    before = parse_book(book).content_hash
    assert parse_book(book).content_hash == before
    writer = PdfWriter(clone_from=chapter_pdf)
    writer.add_metadata({"/Subject": "edited"})
    writer.write(book / "balance.pdf")
    assert parse_book(book).content_hash != before


def test_running_headers_footers_and_page_numbers_are_not_text(tmp_path: Path) -> None:
    steps = ["The swing leg moves forward.", "The heel touches down.", "Weight shifts onto it.",
             "The other leg pushes off."]
    body = "".join(f'<p class="turn">{step}</p>' for step in steps)
    print_pdf(page(f"<h2>Stepping</h2>{body}", title="Gait Handbook"), tmp_path / "b" / "x.pdf",
              header_footer=True)  # date + title at the top, file URL + "2/5" at the bottom
    text = parse_book(tmp_path / "b").sections[0].text
    assert "Gait Handbook" not in text and "file:" not in text and "/5" not in text
    assert [line.lstrip("\x1f") for line in text.split("\n")] == steps


def text_pdf(path: Path, pages: list[str], blank_pages: int = 0) -> Path:
    """Pages drawn in Helvetica by pypdf (for sizes Chromium would take minutes to print)."""
    writer = PdfWriter()
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"),
                             NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica")})
    for content in pages:
        new = writer.add_blank_page(612, 792)
        new[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(
            {NameObject("/F1"): writer._add_object(font)})})
        stream = DecodedStreamObject()
        stream.set_data(content.encode("latin-1"))
        new.replace_contents(writer._add_object(stream))
    for _ in range(blank_pages):
        writer.add_blank_page(612, 792)
    writer.write(path)
    return path


def text_lines(*lines: str) -> str:
    return "BT /F1 11 Tf 72 720 Td 14 TL " + " ".join(f"({t}) Tj T*" for t in lines) + " ET"


def test_thousands_of_pages_stop_at_the_cap_with_a_message(tmp_path: Path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    text_pdf(book / "huge.pdf", [text_lines("Only the first page holds text.")],
             blank_pages=pdf.MAX_PDF_PAGES + 499)
    started = time.perf_counter()
    parsed = parse_book(book)
    assert time.perf_counter() - started < 30  # 2,000 blank pages read, 499 not even opened
    assert parsed.report.skipped_files == [{
        "path": "huge.pdf pages 2,001-2,500",
        "reason": "not read: Folio reads the first 2,000 pages of a PDF; split the file to "
                  "include the rest"}]
    assert [s.text for s in parsed.sections] == ["Only the first page holds text."]


def test_a_huge_page_is_left_out_with_its_reason(tmp_path: Path) -> None:
    book = tmp_path / "book"
    book.mkdir()
    drawing = "BT /F1 11 Tf 72 720 Td (x) Tj ET\n" * (pdf.MAX_PAGE_CONTENT_BYTES // 30)
    long_line = "word " * 900  # 4,500 characters a line, 30 lines: over 100,000 characters
    text_pdf(book / "odd.pdf", [text_lines("A normal page of text."), drawing,
                                text_lines(*[long_line] * 30)])
    started = time.perf_counter()
    parsed = parse_book(book)
    assert time.perf_counter() - started < 30
    reasons = {f["path"]: f["reason"] for f in parsed.report.skipped_files}
    assert reasons == {
        "odd.pdf page 2": "over the 2 MB of drawing instructions a page may have; not read",
        "odd.pdf page 3": "over the 100,000 characters of text a page may have; not read"}
    assert [s.text for s in parsed.sections] == ["A normal page of text."]


def test_a_pdf_past_its_drawing_budget_is_read_up_to_it(tmp_path: Path, monkeypatch) -> None:
    pages = [text_lines(*[f"Page {n} line {i} is about actuators." for i in range(40)])
             for n in range(1, 5)]
    monkeypatch.setattr(pdf, "MAX_PDF_CONTENT_BYTES", int(len(pages[0]) * 2.5))
    book = tmp_path / "book"
    book.mkdir()
    text_pdf(book / "long.pdf", pages)
    parsed = parse_book(book)
    [skipped] = parsed.report.skipped_files
    assert skipped["path"] == "long.pdf pages 3, 4"
    assert skipped["reason"].startswith("past the ") and "split the file" in skipped["reason"]
    assert [(s.page, s.page_end) for s in parsed.sections] == [(1, 2)]


def test_page_lists_read_like_a_person_wrote_them() -> None:
    assert pdf.page_list([3]) == "page 3"
    assert pdf.page_list([3, 7]) == "pages 3, 7"
    assert pdf.page_list([2, 3, 4, 5, 9]) == "pages 2-5, 9"
