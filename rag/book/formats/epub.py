"""EPUB 2 and 3 books: chapters in spine order, titled from the table of contents (EPUB 3's nav
document, else EPUB 2's NCX), the book's title from its metadata.

The package (container.xml -> OPF manifest, spine, nav/NCX) is read here with the standard
library's XML parser (expat 2.5: entity expansion bounded, no external entities), not ebooklib:
ebooklib is AGPL-3.0, which would bind Folio's own licence, it unpacks every manifest item into
memory (images included) and fails the whole book on one missing file or a nav without a toc.
ebooklib writes the test fixtures instead (requirements-dev.txt), an independent implementation
the reader is checked against. Chapter XHTML goes through the shared HTML-to-Markdown path.
"""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ElementTree
import zipfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from rag.book.formats import base
from rag.book.formats.archive import open_zip, read_member
from rag.book.formats.base import ConvertedBook, ConvertedChapter, Problems, Unreadable
from rag.book.formats.html_markdown import decode_html, parse_html, soup_to_markdown
from rag.errors import InputError

KIND = "EPUB"
NS = {"c": "urn:oasis:names:tc:opendocument:xmlns:container", "opf": "http://www.idpf.org/2007/opf",
      "dc": "http://purl.org/dc/elements/1.1/", "ncx": "http://www.daisy.org/z3986/2005/ncx/",
      "enc": "http://www.w3.org/2001/04/xmlenc#"}
FONT_OBFUSCATION = {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}
DRM_FILES = {"META-INF/rights.xml": "Adobe DRM", "META-INF/sinf.xml": "Apple FairPlay DRM"}
XHTML_TYPES = {"application/xhtml+xml", "text/html"}
MISSING = "chapters missing from the archive (listed in the spine, not in the file)"
UNPACK_FAILED = ("chapters not read: damaged in the archive or over "
                 f"{base.MAX_MARKUP_BYTES // 2**20} MB")
NOT_XHTML = "spine items that are not XHTML skipped (e.g. SVG or image pages)"


@dataclass(frozen=True)
class _Item:
    href: str  # the member's path in the archive
    media_type: str
    properties: str


def read_epub(raw: bytes, name: str) -> ConvertedBook:
    """The book's chapters as Markdown; InputError when it cannot be read at all."""
    archive = open_zip(raw, name, KIND)
    _refuse_drm(archive, name)
    opf_path = _package_path(archive, name)
    opf = _xml(read_member(archive, opf_path, name, KIND), name, opf_path)
    manifest = _manifest(opf, posixpath.dirname(opf_path))
    spine = [manifest[ref.get("idref", "")] for ref in opf.iterfind("opf:spine/opf:itemref", NS)
             if ref.get("idref", "") in manifest]
    if not spine:
        raise InputError(f"{name} has an empty spine (no reading order): export it again from "
                         "the program that made it.")
    title_el = opf.find("opf:metadata/dc:title", NS)
    title = " ".join((title_el.text or "").split()) if title_el is not None else ""
    problems = Problems()
    toc = _toc(archive, name, opf, manifest)
    chapters = _chapters(archive, spine, toc, posixpath.dirname(opf_path), problems)
    if not chapters:
        raise InputError(f"{name} has no chapter with text Folio can read: "
                         + "; ".join(problems.lines() or ["its chapters are empty"]))
    return ConvertedBook(title or PurePosixPath(name).stem, chapters, problems.lines())


def _refuse_drm(archive: zipfile.ZipFile, name: str) -> None:
    names = set(archive.namelist())
    for path, scheme in DRM_FILES.items():
        if path in names:
            raise InputError(f"{name} is protected by {scheme}: Folio cannot read it. Use a "
                             "DRM-free copy of the book (many publishers sell them).")
    if "META-INF/encryption.xml" in names:
        doc = _xml(read_member(archive, "META-INF/encryption.xml", name, KIND), name,
                   "META-INF/encryption.xml")
        for method in doc.iterfind(".//enc:EncryptionMethod", NS):
            if method.get("Algorithm") not in FONT_OBFUSCATION:  # obfuscated fonts are no DRM
                raise InputError(f"{name} is encrypted (DRM): Folio cannot read it. Use a "
                                 "DRM-free copy of the book (many publishers sell them).")


def _package_path(archive: zipfile.ZipFile, name: str) -> str:
    container = _xml(read_member(archive, "META-INF/container.xml", name, KIND), name,
                     "META-INF/container.xml")
    for rootfile in container.iterfind(".//c:rootfile", NS):
        if rootfile.get("media-type") == "application/oebps-package+xml" and rootfile.get(
                "full-path"):
            return unquote(rootfile.get("full-path", ""))
    raise InputError(f"{name}: META-INF/container.xml names no package document (.opf): "
                     "export the book again from the program that made it.")


def _manifest(opf: ElementTree.Element, opf_dir: str) -> dict[str, _Item]:
    return {item.get("id", ""): _Item(_join(opf_dir, item.get("href", "")),
                                      item.get("media-type", ""), item.get("properties", ""))
            for item in opf.iterfind("opf:manifest/opf:item", NS)}


def _toc(archive: zipfile.ZipFile, name: str, opf: ElementTree.Element,
         manifest: dict[str, _Item]) -> dict[str, str]:
    """Member path -> its first title in the table of contents (nav, else NCX); {} if none."""
    titles: dict[str, str] = {}
    nav = next((i for i in manifest.values() if "nav" in i.properties.split()), None)
    spine_el = opf.find("opf:spine", NS)
    ncx = manifest.get(spine_el.get("toc", "") if spine_el is not None else "")
    try:
        if nav is not None:
            soup = parse_html(decode_html(read_member(archive, nav.href, name, KIND)), nav.href)
            navs = soup.find_all("nav")
            toc = next((n for n in navs if "toc" in str(n.get("epub:type", "")).split()),
                       navs[0] if navs else None)
            links = [(a["href"], a.get_text(" ")) for a in toc.find_all("a", href=True)] \
                if toc is not None else []
            base_dir = posixpath.dirname(nav.href)
        elif ncx is not None:
            doc = _xml(read_member(archive, ncx.href, name, KIND), name, ncx.href)
            links = [(p.find("ncx:content", NS).get("src", ""),
                      "".join(p.find("ncx:navLabel", NS).itertext()))
                     for p in doc.iterfind(".//ncx:navPoint", NS)
                     if p.find("ncx:content", NS) is not None
                     and p.find("ncx:navLabel", NS) is not None]
            base_dir = posixpath.dirname(ncx.href)
        else:
            return titles
    except (InputError, Unreadable):
        return titles  # a damaged table of contents: titles then come from the headings
    for href, text in links:
        target = _join(base_dir, urlsplit(href).path)
        if target not in titles and " ".join(text.split()):
            titles[target] = " ".join(text.split())
    return titles


def _chapters(archive: zipfile.ZipFile, spine: list[_Item], toc: dict[str, str], opf_dir: str,
              problems: Problems) -> list[ConvertedChapter]:
    chapters, taken = [], set()
    for n, item in enumerate(spine, 1):
        relative = posixpath.relpath(item.href, opf_dir or ".")
        if "nav" in item.properties.split():
            continue  # the table of contents as a page: a list of the chapters that follow
        if item.media_type not in XHTML_TYPES:
            problems.add(NOT_XHTML, relative)
            continue
        if item.href not in archive.namelist():
            problems.add(MISSING, relative)
            continue
        try:
            raw = read_member(archive, item.href, "the EPUB", KIND)
        except InputError:
            problems.add(UNPACK_FAILED, relative)
            continue
        try:
            soup = parse_html(decode_html(raw), relative)
        except (InputError, Unreadable) as e:
            problems.add(str(e) if isinstance(e, Unreadable) else base.PAGE_TOO_LARGE, relative)
            continue
        body = soup.body or soup
        markdown = soup_to_markdown(body, soup, problems, relative)
        if not markdown.strip():
            problems.add(base.PAGE_NO_TEXT, relative)
            continue
        heading = body.find(["h1", "h2", "h3"])
        title = toc.get(item.href) or (" ".join(heading.get_text(" ").split()) if heading else "")
        path = base.unique_path(base.path_slug(relative), taken, f"chapter-{n}")
        chapters.append(ConvertedChapter(path, title, markdown))
    return chapters


def _xml(raw: bytes, name: str, member: str) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(raw)
    except ElementTree.ParseError as e:
        raise InputError(f"{name}: {member} is not well-formed XML ({e}): export the book "
                         "again from the program that made it.") from e


def _join(directory: str, href: str) -> str:
    return posixpath.normpath(posixpath.join(directory, unquote(href))).lstrip("/")
