"""Word (.docx) books: mammoth turns the document's styles into semantic HTML, the shared
HTML-to-Markdown path does the rest; Heading 1 starts a chapter, Heading 2-6 are its sections.

mammoth (BSD-2, maintained) is made for this: it maps styles, not looks, to HTML (headings,
lists from Word's numbering, tables, footnotes, hyperlinks, bookmarks) and says which styles it
did not recognise. python-docx exposes paragraphs and runs but not lists or notes; markitdown
wraps mammoth and markdownify too but brings a large dependency tree and no control over heading
ids or what is reported. Images are never unpacked (counted, alt text kept).
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ElementTree
from pathlib import PurePosixPath

import mammoth
from bs4 import BeautifulSoup, Tag

from rag.book.formats.archive import OLE_MAGIC, check_file_size, open_zip, read_member
from rag.book.formats.base import ConvertedBook, ConvertedChapter, Problems, unique_path
from rag.book.formats.html_markdown import PARSER, parse_html, soup_to_markdown
from rag.book.slugs import slugify
from rag.errors import InputError

KIND = "Word document (.docx)"
DOC_TITLE_CLASS = "folio-doc-title"
STYLE_MAP = f"""
p[style-name='Title'] => h1.{DOC_TITLE_CLASS}:fresh
p[style-name='Subtitle'] => p:fresh
p[style-name='Quote'] => blockquote > p:fresh
p[style-name='Intense Quote'] => blockquote > p:fresh
p[style-name='Block Text'] => blockquote > p:fresh
p[style-name='Code'] => pre:separator('\\n')
p[style-name='Source Code'] => pre:separator('\\n')
p[style-name='HTML Preformatted'] => pre:separator('\\n')
p[style-name='Plain Text'] => pre:separator('\\n')
p[style-name='Macro Text'] => pre:separator('\\n')
r[style-name='HTML Code'] => code
r[style-name='Code Char'] => code
r[style-name='Verbatim Char'] => code
r[style-name='Source Code Char'] => code
"""
# Styles that mean "a plain paragraph" (Word's, LibreOffice's, Pandoc's): no loss to report.
PLAIN_STYLES = re.compile(r"^(?:Normal.*|Body Text.*|First Paragraph|Compact|List Paragraph|"
                          r"No Spacing|Default Paragraph Font|Caption|Table Contents|"
                          r"Text Body|Hyperlink|Strong|Emphasis|\w+Tok)$", re.IGNORECASE)
UNKNOWN_STYLE = re.compile(r"^Unrecognised (paragraph|run) style: (.*?) \(Style ID: .*\)$")
IGNORED_ELEMENT = re.compile(r"^An unrecognised element was ignored: (\S+)$")
MATH_NS = "officeDocument/2006/math"  # mammoth names elements of unknown namespaces by URI
EQUATION = "equations dropped (Word equations are not read; type key formulas as text)"
EQUATION_XML = re.compile(rb"<(?:\w+:)?oMath[\s>]")
STYLE_AS_TEXT = ("{kind} styles read as plain text (give those paragraphs a Heading, Quote or "
                 "Code style to keep their meaning)")
WORD_INTERNAL_ID = re.compile(r"^_(?:Toc|Ref|GoBack|Hlk)")  # bookmarks Word makes by itself
ENCRYPTED_STREAM = "EncryptionInfo".encode("utf-16-le")
CORE_TITLE = "{http://purl.org/dc/elements/1.1/}title"


def read_docx(raw: bytes, name: str) -> ConvertedBook:
    """The document's chapters as Markdown; InputError when it cannot be read at all."""
    check_file_size(raw, name)
    if raw.startswith(OLE_MAGIC):
        if ENCRYPTED_STREAM in raw:
            raise InputError(f"{name} is password-protected: open it in Word, remove the "
                             "password (File > Info > Protect Document) and save it again.")
        raise InputError(f"{name} is a Word 97-2003 .doc, not a .docx: open it in Word or "
                         "LibreOffice and save it as .docx.")
    archive = open_zip(raw, name, KIND)
    document = read_member(archive, "word/document.xml", name, KIND)  # there, within limits
    problems = Problems()
    problems.add(EQUATION, count=len(EQUATION_XML.findall(document)))
    soup = parse_html(_to_html(raw, name, problems), name)
    title_tag = soup.find("h1", class_=DOC_TITLE_CLASS)
    doc_title = _core_title(archive) or _text(title_tag) or PurePosixPath(name).stem
    if title_tag is not None:
        title_tag.extract()
    for anchor in soup.find_all("a", id=WORD_INTERNAL_ID):
        anchor.extract()
    for backlink in soup.find_all("a", href=re.compile(r"^#(?:foot|end)note-ref-")):
        backlink.extract()  # the "↑" after each note
    return ConvertedBook(doc_title, _chapters(soup, doc_title, problems), problems.lines())


def _to_html(raw: bytes, name: str, problems: Problems) -> str:
    def count_image(image: mammoth.documents.Image) -> dict[str, str]:
        return {"alt": image.alt_text or ""}  # no src: the image's bytes are never read

    try:
        result = mammoth.convert_to_html(io.BytesIO(raw), style_map=STYLE_MAP,
                                         convert_image=mammoth.images.img_element(count_image))
    except Exception as e:  # mammoth raises whatever its XML reader or zipfile met
        raise InputError(f"{name} is a damaged {KIND} ({type(e).__name__}: {e}): open it in "
                         "Word and save it again.") from e
    for message in result.messages:
        _note(message.message, problems)
    return result.value


def _note(message: str, problems: Problems) -> None:
    """mammoth's warnings (each said once): a style it read as plain text, an element dropped.
    Equations are counted from the XML instead, since one warning stands for all of them."""
    style = UNKNOWN_STYLE.match(message)
    element = IGNORED_ELEMENT.match(message)
    if style and not PLAIN_STYLES.match(style.group(2)):
        problems.add(STYLE_AS_TEXT.format(kind=style.group(1).replace("run", "character")),
                     f"'{style.group(2)}'")
    elif element and not (element.group(1).startswith("m:") or MATH_NS in element.group(1)):
        local = element.group(1).rsplit("}", 1)[-1]
        problems.add("Word element kinds dropped (not read by Folio)", f"<{local}>")
    elif not style and not element:
        problems.add(f"not read: {message}")


def _chapters(soup: BeautifulSoup, doc_title: str, problems: Problems) -> list[ConvertedChapter]:
    """Split at each top-level <h1>: mammoth's output is flat, one element per paragraph."""
    parts: list[tuple[str, list[Tag]]] = [(doc_title, [])]
    for node in list(soup.children):
        if isinstance(node, Tag) and node.name == "h1":
            parts.append((_text(node), []))
        parts[-1][1].append(node.extract())
    chapters: list[ConvertedChapter] = []
    taken: set[str] = set()
    for n, (title, nodes) in enumerate(parts):
        holder = BeautifulSoup("", PARSER)
        for node in nodes:
            holder.append(node)
        slug = "front-matter" if n == 0 else slugify(title)
        where = slug or f"chapter {n}"
        markdown = soup_to_markdown(holder, holder, problems, where)
        if markdown.strip():
            chapters.append(ConvertedChapter(unique_path(slug, taken, f"chapter-{n}"), title,
                                             markdown))
    if not chapters:
        raise InputError("The document has no text Folio can read (only images or objects?): "
                         "add the text, or export it from the program that made it.")
    return chapters


def _core_title(archive) -> str:
    """The title in the document's properties (File > Info), if set."""
    if "docProps/core.xml" not in archive.namelist():
        return ""
    try:
        raw = read_member(archive, "docProps/core.xml", "", KIND, limit=2**20)
        found = ElementTree.fromstring(raw).find(CORE_TITLE)
    except (InputError, ElementTree.ParseError):
        return ""
    return " ".join((found.text or "").split()) if found is not None else ""


def _text(tag: Tag | None) -> str:
    return " ".join(tag.get_text(" ").split()) if tag is not None else ""

