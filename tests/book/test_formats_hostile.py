"""Every input has a defined outcome: truncated and corrupted DOCX and EPUB files, random bytes
and random tag soup either convert or raise InputError, never another exception, and what converts
carries no markup."""

from __future__ import annotations

import random
import re

import pytest

from rag.book.formats import ConvertedBook, html_to_markdown, read_docx, read_epub, read_html_site
from rag.errors import InputError
from tests.builders import handbook_docx, handbook_epub

UNESCAPED_TAG = re.compile(r"(?<!\\)<[A-Za-z/!?]")
FENCE = re.compile(r"^(`{3,}).*?^\1\s*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"(?<![`\\])(`+)(?!`)(.+?)(?<!`)\1(?!`)")  # on one line: no blank line
TAGS = ["p", "div", "span", "a", "em", "pre", "code", "table", "tr", "td", "ul", "li", "h2",
        "script", "style", "img", "math", "section", "br", "blockquote", "svg", "template"]


def outcome(read, raw: bytes) -> str:
    """'book' or the InputError's message; any other exception fails the test."""
    try:
        book = read(raw, "book")
    except InputError as e:
        assert str(e) and "\n" not in str(e) and "Traceback" not in str(e)
        return str(e)
    assert isinstance(book, ConvertedBook)
    for chapter in book.chapters:
        assert_no_markup(chapter.markdown)
    return "book"


def assert_no_markup(markdown: str) -> None:
    prose = CODE_SPAN.sub("", FENCE.sub("", markdown))  # code keeps its characters
    assert not UNESCAPED_TAG.search(prose), prose
    assert "<!--" not in prose.replace("\\<!--", "")


def corruptions(raw: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    cut = [raw[: int(len(raw) * f)] for f in (0.05, 0.3, 0.6, 0.9, 0.99)]
    flipped = []
    for _ in range(6):
        data = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        flipped.append(bytes(data))
    return [b"", b"PK\x03\x04", *cut, *flipped]


@pytest.mark.parametrize("read, build", [(read_docx, handbook_docx), (read_epub, handbook_epub)])
def test_truncated_and_corrupted_books_convert_or_say_why(read, build):
    outcomes = [outcome(read, raw) for raw in corruptions(build(), seed=40)]
    assert outcomes[0] != "book" and outcomes[1] != "book"
    assert any(o != "book" for o in outcomes[2:])


def tag_soup(rng: random.Random, size: int) -> str:
    parts = []
    for _ in range(size):
        tag = rng.choice(TAGS)
        roll = rng.random()
        if roll < 0.35:
            attrs = rng.choice(['', ' id="x y"', ' class="language-py"', ' href="#a"',
                                ' href="https://e.org/(x)"', ' colspan="9999"', ' hidden',
                                ' rowspan="2"', ' alt="a b c"', ' type="math/tex"'])
            parts.append(f"<{tag}{attrs}>")
        elif roll < 0.6:
            parts.append(f"</{tag}>")
        else:
            parts.append(rng.choice(["text", "&lt;b&gt;", "&amp;", "<!-- c -->", "*", "_x_",
                                     "# h", "1. ", "|", "`", "$", "{{#x}}", "\u200b", "\x00",
                                     "<![CDATA[z]]>", "<?pi?>", "]]>", "&#0;", "&#xD800;"]))
    return "".join(parts)


def test_random_tag_soup_always_converts_to_markdown_without_markup():
    rng = random.Random(40)
    for _ in range(40):
        markdown, problems = html_to_markdown(tag_soup(rng, 300))
        assert_no_markup(markdown)
        assert all(isinstance(p, str) for p in problems)


def test_a_site_of_random_bytes_and_soup_converts_what_it_can():
    rng = random.Random(7)
    pages = [(f"p{n}.html", bytes(rng.randrange(256) for _ in range(500))) for n in range(5)]
    pages += [(f"s{n}.html", tag_soup(rng, 200).replace("\x00", "").encode("utf-8", "replace"))
              for n in range(5)]
    assert outcome(lambda raw, name: read_html_site(pages), b"") == "book"
