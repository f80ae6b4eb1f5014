"""HTML to CommonMark with markdownify (MIT, maintained, and built on BeautifulSoup, which the
site reader needs anyway), adjusted where its output would be read back as something else.

markdownify gives ATX headings, lists, pipe tables, fenced code and links. What is added here:
heading ids as `{#id}`, fences longer than any backtick run in the code, code languages found by
html_prep, links into the book reduced to their text, `$TeX$` math, `|` escaped in table cells,
and escapes for text that CommonMark (or a dialect the reader understands) would take for markup:
`<tag`, `&entity;`, `{{`/`{%`/`{#` directives, `$`, and block markers at the start of a text.
HTML whitespace is collapsed (markdownify's `wrap` without a width), so a line starts only where
a block or a `<br>` starts one.
"""

from __future__ import annotations

import codecs
import re

from bs4 import BeautifulSoup, NavigableString, PageElement, Tag
from markdownify import ATX, MarkdownConverter, chomp

from rag.book.formats import base
from rag.book.formats.base import Problems, Unreadable
from rag.book.formats.html_prep import prepare
from rag.errors import InputError

PARSER = "html.parser"  # closes XHTML's `<a id="x"/>` itself, where lxml's HTML parser would not
EXTERNAL = re.compile(r"^(?:https?|mailto|ftp):", re.IGNORECASE)
BLOCKS = {"p", "div", "section", "article", "main", "body", "blockquote", "li", "ul", "ol", "dl",
          "dt", "dd", "pre", "table", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
          "figure", "figcaption", "header", "footer", "aside", "details", "summary", "caption",
          "[document]", "html"}
HEADING_ID = re.compile(r"^[^\s{}#]+$")
ESCAPES = [  # (pattern, replacement) applied to every text outside code, in this order
    (re.compile(r"\\(?=[!-/:-@\[-`{-~])"), r"\\\\"),  # a backslash that would escape the next
    (re.compile(r"([*`$])"), r"\\\1"),
    (re.compile(r"(?<![^\W_])_|_(?![^\W_])"), r"\\_"),  # `_` not inside a word
    (re.compile(r"<(?=[A-Za-z/!?])"), r"\\<"),  # a tag, comment or autolink
    (re.compile(r"&(?=#?\w+;)"), r"\\&"),  # an entity
    (re.compile(r"\](?=[(\[:])"), r"\\]"),  # a link or reference
    (re.compile(r"\{(?=[{%#])"), r"\\{"),  # Liquid, mdBook and heading-attribute braces
    (re.compile(r"~~"), r"\\~~"),
]
# only ever searched in a page's first 4,096 bytes (decode); possessive around the '='
CHARSET = re.compile(rb"""<meta[^>]{1,500}?charset\s*+=\s*+["']?\s*+([\w.:-]+)""", re.IGNORECASE)
XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([\w.:-]+)""")
LINE_START = re.compile(  # block markers at the start of a text (a line can start there)
    r"^(\s*)(#{1,6}(?=\s|$)|>|[-+](?=\s|$)|-{2,}|=+|\||\[|:::|!!!|\?\?\?|///|~~~"
    r"|\d{1,9}(?=[.)](?:\s|$)))")


class BookConverter(MarkdownConverter):
    """markdownify with the adjustments above; one instance per document."""

    def __init__(self) -> None:
        self._line_start = True
        super().__init__(heading_style=ATX, bullets="-", autolinks=False, wrap=True,
                         wrap_width=None, table_infer_header=True, escape_asterisks=False,
                         escape_underscores=False, strip_document="strip")

    def process_text(self, el: NavigableString, parent_tags: set[str] | None = None) -> str:
        self._line_start = _starts_line(el)  # read by escape(), which markdownify calls inside
        text = super().process_text(el, parent_tags)
        if self._line_start and "pre" not in (parent_tags or ()):
            text = text.lstrip(" ")  # what removed elements left before the first word
        return text

    def escape(self, text: str, parent_tags: set[str]) -> str:
        for pattern, replacement in ESCAPES:
            text = pattern.sub(replacement, text)
        if any(t in parent_tags for t in ("h1", "h2", "h3", "h4", "h5", "h6")):
            text = text.replace("{", "\\{")  # a heading's text never ends in a fake {#id}
        if self._line_start and "_inline" not in parent_tags:
            text = LINE_START.sub(_escape_marker, text)
        return text

    def convert_hN(self, n: int, el: Tag, text: str, parent_tags: set[str]) -> str:
        text = " ".join(text.split())
        if "_inline" in parent_tags or not text:
            return text
        anchor = str(el.get("id") or "")
        suffix = f" {{#{anchor}}}" if HEADING_ID.match(anchor) else ""
        return f"\n\n{'#' * max(1, min(6, n))} {text}{suffix}\n\n"

    def convert_a(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        href = str(el.get("href") or "").strip()
        if "_noformat" in parent_tags or not EXTERNAL.match(href) or not text.strip():
            return text  # a link inside the book or its site: its ids change, its text stays
        prefix, suffix, body = chomp(text)
        target = href.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
        return f"{prefix}[{body}]({target}){suffix}"

    def convert_pre(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        code = text.strip("\n")
        if not code.strip():
            return ""
        if "_inline" in parent_tags:  # a code block in a table cell or heading: one line
            return f" {self.convert_code(el, ' '.join(code.split()), set())} "
        longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
        fence = "`" * max(3, longest + 1)
        return f"\n\n{fence}{el.get('data-lang') or ''}\n{code}\n{fence}\n\n"

    def convert_code(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if "_noformat" in parent_tags or "\n" not in text:
            return super().convert_code(el, text, parent_tags)
        return super().convert_code(el, " ".join(text.split()), parent_tags)  # a span is a line

    convert_kbd = convert_code
    convert_samp = convert_code

    def convert_br(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        if "pre" in parent_tags:
            return "\n"
        return super().convert_br(el, text, parent_tags)

    def convert_td(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return super().convert_td(el, text.replace("|", "\\|"), parent_tags)

    def convert_th(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return super().convert_th(el, text.replace("|", "\\|"), parent_tags)

    def convert_folio_math(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        tex = str(el.get("tex") or "").strip()
        if not tex:
            return ""
        if el.get("display") and "_inline" not in parent_tags:
            return f"\n\n$$\n{tex}\n$$\n\n"
        return f"${' '.join(tex.split())}$"

    def convert_del(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return text  # struck-out text reads as text; `~~` is not CommonMark

    convert_s = convert_del
    convert_strike = convert_del


def _starts_line(el: PageElement) -> bool:
    """Whether this text can begin a Markdown line: nothing but blocks or a <br> before it in
    its block (whitespace is collapsed, so nowhere else does a line start)."""
    node = el
    while node is not None:
        prev = node.previous_sibling
        while (isinstance(prev, NavigableString) and not prev.strip()) or (
                isinstance(prev, Tag) and prev.name not in BLOCKS | {"br", "folio-math"}
                and next(prev.stripped_strings, None) is None):  # nothing left of it to show
            prev = prev.previous_sibling
        if prev is not None:
            return isinstance(prev, Tag) and (prev.name == "br" or prev.name in BLOCKS)
        node = node.parent
        if node is None or node.name in BLOCKS:
            return True
    return True


def _escape_marker(m: re.Match[str]) -> str:
    marker = m.group(2)
    if marker[0].isdigit():
        return m.group(0) + "\\"  # "1." -> "1\." once the "." follows
    return f"{m.group(1)}\\{marker}"


def soup_to_markdown(root: Tag, soup: BeautifulSoup, problems: Problems, where: str) -> str:
    """Markdown of `root` (changed in place: the caller hands over a tree it owns)."""
    prepare(root, soup, problems, where)
    return tidy(BookConverter().convert_soup(root))


def tidy(markdown: str) -> str:
    """No trailing spaces except hard breaks, at most one blank line between blocks."""
    lines = [line if line.endswith("  ") and line.strip() else line.rstrip()
             for line in markdown.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"


def decode_html(raw: bytes) -> str:
    """A page's text by its BOM, its declared charset, else UTF-8; Unreadable otherwise."""
    for bom, codec in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"),
                       (codecs.BOM_UTF16_BE, "utf-16")):
        if raw.startswith(bom):
            return raw.decode(codec, errors="replace")
    head = raw[:4096]
    if b"\x00" in head or sum(b < 9 or 13 < b < 32 for b in head) > len(head) // 10:
        raise Unreadable(base.PAGE_NOT_HTML)
    declared = XML_ENCODING.match(head) or CHARSET.search(head)
    codec = declared.group(1).decode("ascii").lower() if declared else "utf-8"
    try:
        return raw.decode(codec)
    except LookupError as e:
        raise Unreadable(base.PAGE_BAD_CHARSET) from e
    except UnicodeDecodeError as e:
        raise Unreadable(base.PAGE_BAD_CHARSET if declared else base.PAGE_NOT_UTF8) from e


def parse_html(html: str, where: str) -> BeautifulSoup:
    if len(html) > base.MAX_HTML_BYTES:
        raise InputError(f"{where} is {len(html) / 2**20:,.1f} MB of HTML, over the "
                         f"{base.MAX_HTML_BYTES / 2**20:,.0f} MB Folio reads as one document: "
                         "split it into smaller files.")
    return BeautifulSoup(html, PARSER)


def html_to_markdown(html: str) -> tuple[str, list[str]]:
    """CommonMark for an HTML fragment or page, and what was dropped or not interpreted."""
    problems = Problems()
    soup = parse_html(html, "the HTML")
    body = soup.body or soup
    return soup_to_markdown(body, soup, problems, ""), problems.lines()
