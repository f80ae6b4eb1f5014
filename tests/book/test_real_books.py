"""Every book in ../shared/data (four real books of different kinds, written by nobody here) and a
generated hostile corpus read without a traceback, without losing a file, and without raw markup
in any quotable unit or chunk (issue 40, item 3). A book that is absent is skipped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.book.chunk import ChunkerSettings, chunk_book
from rag.book.listing import list_book_files
from rag.book.parse import content_hash, parse_book, resolve_book_root
from rag.book.sentences import split_section
from tests.builders import SAMPLE_BOOK, shared_path

# what an author's source may hold and a reader must never see in an answer
RAW_MARKUP = ("<!--", "{{#", "{%", ":::")
REFERENCE_DEFINITION_RE = re.compile(r"^ {0,3}\[[^\]\n]{1,200}\]: \S", re.MULTILINE)
FENCED_RE = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.DOTALL | re.MULTILINE)

HOSTILE = {
    "intro.md": "# Start\n\nIs this a question?\n",
    "comments.md": "# Notes\n\nSeen text. <!-- hidden\nacross lines -->\n\n<!-- never closed\n",
    "includes.md": "# Listing\n\n{{#rustdoc_include ../missing/main.rs:here}}\n\nAfter the "
                   "include.\n\n{* ../docs_src/missing.py hl[3] *}\n\n--8<-- \"nowhere.md\"\n",
    "liquid.md": "# Liquid\n\n{% include note.html content=\"a\" %}\n\nText {{ site.title }} "
                 "here.\n\n{% raw %}{{ kept }}{% endraw %}\n",
    "containers.md": "# Boxes\n\n:::note\nInside a note.\n:::\n\n::: warning\nNever closed.\n",
    "refs.md": "# Links\n\nSee [the guide][g] and [another].\n\n[g]: https://example.com\n"
               "[another]: <https://example.com/a> \"Title\"\n",
    "fences.md": "# Code\n\n````md\n```python\nx = 1\n```\n````\n\nProse after.\n\n```\nnever "
                 "closed\n",
    "setext.md": "Title\n=====\n\nBody under a setext heading.\n\nSub\n---\n\nMore body.\n",
    "binary.md": "# Bin\n\n\x00\x01\x02 text with nulls.\n",
}


def hostile_book(root: Path) -> Path:
    for name, text in HOSTILE.items():
        (root / name).write_text(text, encoding="utf-8")
    (root / "latin1.md").write_bytes("# Café\n\nUne phrase écrite en Latin-1.\n".encode("latin-1"))
    return root


def books() -> list:
    shared = ["physical-ai-book", "fastapi-docs", "d2l-book", "content-guide"]
    return [pytest.param("sample", id="sample"), pytest.param("hostile", id="hostile"),
            *(pytest.param(name, id=name, marks=pytest.mark.slow) for name in shared)]


def raw_in(text: str) -> list[str]:
    prose = FENCED_RE.sub("", text)
    found = [m for m in RAW_MARKUP if m in prose]
    return found + ["]: "] * bool(REFERENCE_DEFINITION_RE.search(prose))


@pytest.mark.parametrize("name", books())
def test_a_book_reads_whole_and_without_raw_markup(name: str, tmp_path: Path, embedder) -> None:
    root = SAMPLE_BOOK if name == "sample" else hostile_book(tmp_path) if name == "hostile" \
        else shared_path(name)
    book = parse_book(root)
    assert content_hash(root) == book.content_hash  # what freshness is checked with, unparsed
    listed, skipped = list_book_files(resolve_book_root(root))
    read = {s.source_path for s in book.sections}
    report_skipped = {f["path"] for f in book.report.skipped_files}
    assert book.report.files + len(report_skipped) == len(listed) and not skipped
    # no lost file: each file gave sections or is named, with a reason, in the report; a file
    # holding only its title (an embedded form, an API stub) is the one kind allowed to give none
    for path in listed:
        rel = path.relative_to(resolve_book_root(root)).as_posix()
        if rel not in read and rel not in report_skipped:
            body = [line for line in path.read_text(encoding="utf-8", errors="replace")
                    .splitlines() if line.strip() and not line.startswith("#")]
            assert not [line for line in body if re.search(r"\w{3,} \w{3,}", line)
                        and not line.lstrip().startswith(("<", ":::"))], rel
    leaks = [(s.source_path, s.title, kind) for s in book.sections for kind in raw_in(s.text)]
    leaks += [(s.source_path, u.text[:80], kind) for s in book.sections
              for u in split_section(s.text, s.title) for kind in raw_in(u.text)]
    assert not leaks, leaks[:10]
    chunks = chunk_book(book.sections, book.book_id, ChunkerSettings(embedder.max_tokens),
                        embedder.count_tokens_batch)
    assert {c.section_id for c in chunks} <= {s.section_id for s in book.sections}
    # a long code block is cut across chunks, so a chunk may hold code without its fences: the
    # markup it shows must then be in the code of its own section
    code = {}
    for s in book.sections:
        code.setdefault((s.chapter_id, s.section_id), []).extend(
            m.group(0) for m in FENCED_RE.finditer(s.text))
    assert not [(c.chunk_id, kind) for c in chunks for kind in raw_in(c.text)
                if not any(kind in block for block in code.get((c.chapter_id, c.section_id), ()))
                ][:10]
    if name == "hostile":  # what it cannot read is named with a reason, what it skips counted
        assert {f["path"]: f["reason"] for f in book.report.skipped_files} == {
            "binary.md": "contains NUL bytes",
            "latin1.md": "not valid UTF-8 (byte 0xe9 at offset 5)"}
        assert book.report.missed["includes.md"]["include not found"] == 3
