"""Lines of Markdown as plain text: what a quoted unit of the book reads as (rag.book.sentences),
a table row with the header naming its values, and how much of a line is links (a list of links
is a reading list, not an answer)."""

from __future__ import annotations

import html
import re

ESCAPE_RE = re.compile(r"\\([!-/:-@\[-`{-~])")  # CommonMark: any ASCII punctuation
PRIVATE = 0xF0000  # plane 15: never in a book's text
UNHIDE = {PRIVATE + c: chr(c) for c in range(33, 127)}
IMAGE_RE = re.compile(r"!\[[^\]]{0,1000}\]\([^)]{0,2000}\)")
LINK_RE = re.compile(r"\[([^\]]{0,1000})\]\([^)]{0,2000}\)")
URL_RE = re.compile(r"<?https?://\S+>?")
HTML_RE = re.compile(r"</?[a-zA-Z][^<>]{0,2000}>")
# `__` inside a word is part of it (CommonMark): "ros__parameters" keeps both
EMPHASIS_RE = re.compile(r"\*\*|(?<![^\W_])__|__(?![^\W_])|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")
CODE_SPAN_RE = re.compile(r"`([^`\n]{1,2000})`")
ITEM_MARK_RE = re.compile(r"^(?:[-*+]|\d{1,9}[.)])\s+")
MIN_WORDS, MAX_WORDS = 4, 80  # a quotable unit's length
QUIZ_RE = re.compile(r"^(?:Q\d*[:.]|Question\b|Exercise\b|Quiz\b|Task\b|Challenge\b)", re.I)
# A review answer's label ("**Answer 1**: The main difference is ..."): the book's numbering of
# its answers, not part of what it says (a quote read "Answer 1: The main difference is ...").
ANSWER_LABEL_RE = re.compile(r"^(?:Answer|A)\s*\d{1,3}\s*[:.]\s*", re.I)
# A lead-in that points at what follows says nothing itself ("The integral term works like
# this:"), nor does a lesson's boilerplate ("After this lesson, you will be able to:").
FILLER_LEAD_RE = re.compile(r"\b(?:like this|as follows|(?:the )?following(?: \w+){0,2}|below|"
                            r"this|these|here|(?:will|'ll) (?:be able to|learn(?: how)? to)|"
                            r"ability to|ensure you have)\s*:$|^(?:here(?:'s| is| are)|for "
                            r"example)\b", re.I)


def hide_escapes(text: str) -> str:
    """A backslash escape ("\\*", "\\[", "\\<" in the canonical Markdown of
    rag.book.markdown) as a private-use character, so no rule below takes it for markup."""
    return ESCAPE_RE.sub(lambda m: chr(PRIVATE + ord(m.group(1))), text) if "\\" in text \
        else text


def clean_inline(text: str) -> str:
    """Markdown marks out, link text kept, entities read ("&lt;50ms" is "<50ms"), escapes read
    ("\\*args" is "*args"), whitespace collapsed. A code span keeps what it holds (a URL to
    paste, `<exec_depend>`, `ros__parameters`); only its backticks go."""
    text = LINK_RE.sub(r"\1", IMAGE_RE.sub("", hide_escapes(text)))
    parts = CODE_SPAN_RE.split(text)  # even: prose, odd: code
    text = "".join(part if k % 2 else
                   html.unescape(EMPHASIS_RE.sub("", HTML_RE.sub("", URL_RE.sub("", part))))
                   for k, part in enumerate(parts)).replace("`", "")
    return " ".join(text.translate(UNHIDE).split()).strip(" -–—|")


def link_share(raw: str) -> float:
    """How much of a line is link text: a list of links is a reading list, not an answer."""
    linked = sum(len(m.group(1)) for m in LINK_RE.finditer(raw))
    return linked / max(len(clean_inline(raw)), 1)


def table_row(line: str, header: list[str]) -> str:
    """A table row as "first cell: header other cell; ..." (the header names what a short
    value is: "Humanoid: DOF 20-40+")."""
    cells = [clean_inline(c) for c in line.strip().strip("|").split("|")]
    if len([c for c in cells if c]) < 2:
        return ""
    names = header if len(header) == len(cells) else [""] * len(cells)
    rest = [f"{name} {cell}".strip() if len(cell.split()) <= 3 and name.lower() not in
            cell.lower() else cell for name, cell in zip(names[1:], cells[1:], strict=True)
            if cell]
    return f"{cells[0]}: {'; '.join(rest)}" if cells[0] else "; ".join(rest)


def quotable(text: str) -> bool:
    words = text.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or not re.search(r"[A-Za-z]{2}", text):
        return False
    return not (text.endswith(("?", ":")) or QUIZ_RE.match(text))


def says_something(lead: str) -> bool:
    """A lead-in ending in ':' worth quoting on its own: long enough, and not one that only
    points at what follows (FILLER_LEAD_RE)."""
    return quotable(lead[:-1]) and not FILLER_LEAD_RE.search(lead)


def plain_text(markdown: str) -> str:
    """A chunk's canonical Markdown as the words a reader sees (an excerpt under a citation):
    inline marks read, fences, table rules and item markers out, a table's rows read as the
    book's units read them ("28 mm: Pressure 80 psi;", table_row) under the header that names
    their cells, the last one ending in a full stop."""
    lines: list[str] = []
    rows = markdown.split("\n")
    header: list[str] = []
    for n, line in enumerate(rows):
        stripped = line.strip()
        if not stripped or stripped.startswith(("```", "~~~", "$$")) or \
                set(stripped) <= set("|-: "):
            continue
        if stripped.startswith("|"):
            following = rows[n + 1].strip() if n + 1 < len(rows) else ""
            if following.startswith("|") and set(following) <= set("|-: "):
                header = [clean_inline(c) for c in stripped.strip("|").split("|")]
                continue  # the header names the cells of the rows under it
            row = table_row(stripped, header) or clean_inline("; ".join(
                c.strip() for c in stripped.strip("|").split("|") if c.strip()))
            lines.append(row + (";" if following.startswith("|") else "."))
            continue
        stripped = ITEM_MARK_RE.sub("", stripped.lstrip("> "))
        lines.append(clean_inline(stripped) if stripped else "")
    return " ".join(line for line in lines if line)
