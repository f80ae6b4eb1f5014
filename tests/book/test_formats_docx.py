"""Word documents (rag.book.formats.docx): written with python-docx at test time, read through
mammoth into Markdown chapters split at Heading 1; damaged, locked, legacy and oversized files
refused with what to do, never a traceback."""

from __future__ import annotations

import base64
import io
import struct
import zipfile

import pytest
from docx.oxml import parse_xml
from docx.shared import Inches

from rag.book.formats import archive, base, read_docx
from rag.errors import InputError
from tests.builders import HANDBOOK, HANDBOOK_TITLE, docx_bytes, handbook_docx, zip_bytes

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA"
                       "60e6kgAAAABJRU5ErkJggg==")
MATH_NS = "http://schemas.openxmlformats.org/officeDocument/2006/math"
_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"


def test_a_realistic_book_reads_as_its_chapters_and_sections():
    book = read_docx(handbook_docx(), "handbook.docx")
    assert book.title == HANDBOOK_TITLE
    assert book.problems == []
    assert [(c.path, c.title) for c in book.chapters] == [
        ("front-matter", HANDBOOK_TITLE), ("tyres-and-tubes", "Tyres and Tubes"),
        ("brakes", "Brakes"), ("gears", "Gears")]
    assert book.chapters[0].markdown == "How to keep a bicycle running, one job at a time.\n"
    for chapter, (title, _, sections) in zip(book.chapters[1:], HANDBOOK, strict=True):
        headings = [line for line in chapter.markdown.split("\n") if line.startswith("#")]
        assert headings == [f"# {title}", *(f"## {s}" for s, _, _ in sections)]
    assert book.chapters[1].markdown.endswith(
        "## Pressure\n\nA 28 mm road tyre wants about 80 psi for a rider of average weight.\n\n"
        "Lower pressure gives more grip and comfort at the cost of speed.\n\n"
        "| Tyre width | Pressure |\n| --- | --- |\n| 25 mm | 90 psi |\n| 28 mm | 80 psi |\n"
        "| 32 mm | 65 psi |\n")
    assert book.chapters[3].markdown.endswith(
        "```\ndef gear_ratio(front: int, rear: int) -> float:\n    return front / rear\n```\n")


def _bookmark(paragraph, name: str, n: int) -> None:
    start = parse_xml(f'<w:bookmarkStart xmlns:w="{_W}" w:id="{n}" w:name="{name}"/>')
    paragraph._p.insert(1, start)
    paragraph._p.append(parse_xml(f'<w:bookmarkEnd xmlns:w="{_W}" w:id="{n}"/>'))



def _hyperlink(paragraph, url: str, text: str) -> None:
    rel = paragraph.part.relate_to(url, "http://schemas.openxmlformats.org/officeDocument/2006/"
                                        "relationships/hyperlink", is_external=True)
    paragraph._p.append(parse_xml(
        f'<w:hyperlink xmlns:w="{_W}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/'
        f'2006/relationships" r:id="{rel}"><w:r><w:t>{text}</w:t></w:r></w:hyperlink>'))


def small_document(document) -> None:
    document.add_paragraph("Loops Explained", style="Title")
    document.add_paragraph("Read this first.")
    heading = document.add_heading("Loops", level=1)
    _bookmark(heading, "loops", 1)
    toc_heading = document.add_heading("For loops", level=2)
    _bookmark(toc_heading, "_Toc123", 2)
    p = document.add_paragraph("A ")
    p.add_run("for").bold = True
    p.add_run(" loop runs ")
    p.add_run("once").italic = True
    p.add_run(" per item; see ")
    _hyperlink(p, "https://docs.python.org/3/", "the docs")
    p.add_run(".")
    document.add_paragraph("first", style="List Bullet")
    document.add_paragraph("second", style="List Bullet")
    document.add_paragraph("Loops end.", style="Quote")
    document.add_heading("Deeper", level=3)
    document.add_paragraph("Chapter 2 note", style="Intense Quote")
    document.add_heading("Functions", level=1)
    document.add_paragraph("A function has a name.")
    document.add_heading("Notes", level=6)


def test_headings_lists_quotes_links_and_bookmark_ids_become_markdown():
    book = read_docx(docx_bytes(small_document), "loops.docx")
    assert book.title == "Loops Explained"  # the Title paragraph; no title in the properties
    assert [(c.path, c.title) for c in book.chapters] == [
        ("front-matter", "Loops Explained"), ("loops", "Loops"), ("functions", "Functions")]
    assert book.chapters[0].markdown == "Read this first.\n"
    assert book.chapters[1].markdown == (
        "# Loops {#loops}\n\n## For loops\n\n"
        "A **for** loop runs *once* per item; see [the docs](https://docs.python.org/3/).\n\n"
        "- first\n- second\n\n> Loops end.\n\n### Deeper\n\n> Chapter 2 note\n")
    assert book.chapters[2].markdown == "# Functions\n\nA function has a name.\n\n###### Notes\n"
    assert book.problems == []


def test_the_title_comes_from_the_properties_else_the_file_name():
    def titled(document) -> None:
        document.core_properties.title = "From Properties"
        document.add_paragraph("Body.")

    assert read_docx(docx_bytes(titled), "x.docx").title == "From Properties"
    book = read_docx(docx_bytes(lambda d: d.add_paragraph("Body.")), "my-notes.docx")
    assert (book.title, book.chapters[0].title) == ("my-notes", "my-notes")


def test_images_equations_and_unknown_styles_are_counted_per_kind():
    def build(document) -> None:
        document.add_heading("Figures", level=1)
        document.add_picture(io.BytesIO(PNG), width=Inches(1))
        document.inline_shapes[0]._inline.docPr.set("descr", "A worn brake pad beside a new one")
        document.add_picture(io.BytesIO(PNG), width=Inches(1))
        math = document.add_paragraph("Area is ")
        for formula in ("πr²", "2πr"):
            math._p.append(parse_xml(f'<m:oMath xmlns:m="{MATH_NS}"><m:r><m:t>{formula}</m:t>'
                                     "</m:r></m:oMath>"))
        from docx.enum.style import WD_STYLE_TYPE
        document.styles.add_style("Sidebar Box", WD_STYLE_TYPE.PARAGRAPH)
        document.add_paragraph("Aside one.", style="Sidebar Box")
        document.add_paragraph("Aside two.", style="Sidebar Box")

    book = read_docx(docx_bytes(build), "figs.docx")
    assert book.chapters[-1].markdown == ("# Figures\n\nA worn brake pad beside a new one\n\n"
                                          "Area is\n\nAside one.\n\nAside two.\n")
    assert book.problems == [
        "equations dropped (Word equations are not read; type key formulas as text): 2",
        "paragraph styles read as plain text (give those paragraphs a Heading, Quote or Code "
        "style to keep their meaning): 1 (in 'Sidebar Box')", f"{base.IMAGE}: 2 (in figures)"]


def _shrink_declared_size(raw: bytes, member: str, size: int) -> bytes:
    """The archive with `member`'s declared size lowered: its data then runs past what the
    header says, as in a zip bomb that lies about its size."""
    info = zipfile.ZipFile(io.BytesIO(raw)).getinfo(member)
    out = bytearray(raw)
    struct.pack_into("<I", out, info.header_offset + 22, size)
    pos = struct.unpack_from("<I", raw, raw.rindex(b"PK\x05\x06") + 16)[0]  # central directory
    while raw[pos + 46:pos + 46 + len(member)] != member.encode():
        pos += 46 + sum(struct.unpack_from("<HHH", raw, pos + 28))
    struct.pack_into("<I", out, pos + 24, size)
    return bytes(out)


OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(504)


@pytest.mark.parametrize("raw, message", [
    (b"Just some text, not a document.",
     "notes.docx is not a Word document (.docx): it is not a zip archive. Export it again as a "
     "Word document (.docx), or check that the file is not truncated."),
    (OLE + "EncryptionInfo".encode("utf-16-le"),
     "notes.docx is password-protected: open it in Word, remove the password (File > Info > "
     "Protect Document) and save it again."),
    (OLE, "notes.docx is a Word 97-2003 .doc, not a .docx: open it in Word or LibreOffice and "
          "save it as .docx."),
    (zip_bytes({"xl/workbook.xml": "<workbook/>"}),
     "notes.docx is not a complete Word document (.docx): word/document.xml is missing. Export "
     "it again from the program that made it."),
])
def test_files_that_are_not_readable_docx_say_what_to_do(raw, message):
    with pytest.raises(InputError) as e:
        read_docx(raw, "notes.docx")
    assert str(e.value) == message


def test_damaged_archives_and_documents_are_refused_as_damaged():
    good = handbook_docx()
    with pytest.raises(InputError, match=r"^notes\.docx is a damaged Word document \(\.docx\) "
                                         r"\(.+\): export it again from the program that made"):
        read_docx(good[: len(good) // 2], "notes.docx")
    lying = _shrink_declared_size(good, "word/document.xml", 100)
    with pytest.raises(InputError, match=r"^notes\.docx is a damaged Word document \(\.docx\): "
                                         r"word/document\.xml cannot be unpacked \(Bad CRC-32"):
        read_docx(lying, "notes.docx")
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members["word/document.xml"] = b"<w:document><w:body><w:p>unclosed"
    with pytest.raises(InputError, match=r"^notes\.docx is a damaged Word document \(\.docx\) "
                                         r"\(ExpatError: .+\): open it in Word and save it"):
        read_docx(zip_bytes(members), "notes.docx")


def test_zip_bombs_and_huge_documents_are_refused_before_reading(monkeypatch):
    monkeypatch.setattr(archive, "MAX_ENTRIES", 5)
    with pytest.raises(InputError, match=r"^notes\.docx holds \d+ files, over the 5 a Word "
                                         r"document \(\.docx\) may hold"):
        read_docx(handbook_docx(), "notes.docx")
    monkeypatch.undo()
    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 2**20)
    bomb = zip_bytes({"word/document.xml": "<a/>", "zeros.bin": bytes(4 * 2**20)})
    assert len(bomb) < 10_000  # 4 MB of zeros packs to a few kilobytes
    with pytest.raises(InputError, match=r"^notes\.docx unpacks to 4\.0 MB, over the 1\.0 MB limit "
                                         r"\(a zip bomb looks like this\)"):
        read_docx(bomb, "notes.docx")
    monkeypatch.undo()
    monkeypatch.setattr(archive, "MAX_MARKUP_BYTES", 1_000)
    with pytest.raises(InputError, match=r"^notes\.docx: word/document\.xml is \d+ KB, over the "
                                         r"1 KB Folio reads from one part of a book"):
        read_docx(handbook_docx(), "notes.docx")
    monkeypatch.undo()
    monkeypatch.setattr(archive, "MAX_FILE_BYTES", 1_000)
    with pytest.raises(InputError, match=r"^notes\.docx is \d+ KB, over the 1 KB limit for one "
                                         r"book file: split it into parts"):
        read_docx(handbook_docx(), "notes.docx")


def test_a_password_flagged_zip_and_an_empty_document_are_refused():
    raw = bytearray(zip_bytes({"word/document.xml": "<a/>"}))
    struct.pack_into("<H", raw, 6, 1)  # the encryption flag in the local header ...
    central = raw.rindex(b"PK\x01\x02")
    struct.pack_into("<H", raw, central + 8, 1)  # ... and in the central directory
    with pytest.raises(InputError, match=r"^notes\.docx is password-protected: remove the "
                                         r"password in the program that made it"):
        read_docx(bytes(raw), "notes.docx")
    with pytest.raises(InputError, match=r"^The document has no text Folio can read"):
        read_docx(docx_bytes(lambda d: None), "empty.docx")
