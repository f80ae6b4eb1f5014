"""The text of a raw HTML block inside a Markdown book (`<div align="center">...</div>`, a
`<table>` written by hand): block elements become paragraphs, table cells are joined with
'; ', comments, scripts and styles say nothing. The standard library's HTML parser: it never
raises on broken HTML and runs in linear time."""

from __future__ import annotations

from html.parser import HTMLParser

BLOCKS = frozenset("""p div section article header footer aside nav main figure figcaption
blockquote pre table thead tbody tfoot tr ul ol li dl dt dd h1 h2 h3 h4 h5 h6 details summary
hr br""".split())
SILENT = frozenset({"script", "style", "template", "noscript", "svg", "math"})
CELLS = frozenset({"td", "th"})


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.paragraphs: list[list[str]] = [[]]
        self.silent = 0
        self.cell = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in SILENT:
            self.silent += 1
        elif tag in CELLS:
            if self.cell:
                self.paragraphs[-1].append("; ")
            self.cell = True
        elif tag in BLOCKS:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in SILENT:
            self.silent = max(0, self.silent - 1)
        elif tag == "tr":
            self.cell = False
            self._break()
        elif tag in BLOCKS:
            self._break()

    def handle_data(self, data: str) -> None:
        if not self.silent:
            self.paragraphs[-1].append(data)

    def _break(self) -> None:
        if "".join(self.paragraphs[-1]).strip():
            self.paragraphs.append([])


def html_text(html: str) -> str:
    """Paragraphs of the HTML's text separated by blank lines ("" for comments and tags only)."""
    parser = _TextParser()
    start = html.rfind("<!--")
    if start >= 0 and html.find("-->", start + 4) < 0:  # a comment never closed hides the rest,
        html = html[:start]  # as in a browser (the parser would hand it back as text)
    parser.feed(html)
    parser.close()
    return "\n\n".join(" ".join("".join(p).split()) for p in parser.paragraphs
                       if "".join(p).strip())
