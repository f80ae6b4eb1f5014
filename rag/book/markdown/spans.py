"""Guards the rewriter applies before markdown-it reads a file: Liquid spans dropped in one
linear scan, and paragraphs too dense in inline markup for markdown-it's quadratic rules read
as their text (rag.book.markdown.dialects)."""

from __future__ import annotations

import re

MAX_LIQUID = 300  # characters of one Liquid tag or variable
MAX_MARKS, MARK_CHARS = 1000, "[]*_`<"
DROP_MARKS = str.maketrans("", "", MARK_CHARS + "\\")
FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


def _fence_marker(line: str) -> str:
    m = FENCE_RE.match(line)
    return m.group(1) if m else ""


def drop_spans(text: str, opening: str, closing: str, keep_after: str = "",
               longest: int = MAX_LIQUID) -> tuple[str, int]:
    """`text` without each `opening`...`closing` span of at most `longest` characters (one
    that opens with `keep_after` right after `opening` stays); and how many went. A scan with
    str.find, each closing found once: linear, where a lazy regex tried `longest` characters
    after every opening ("{% " twenty thousand times took 3.5 s)."""
    out, start, dropped, close = [], 0, 0, -1
    at = text.find(opening)
    while at >= 0:
        if close < at + len(opening):
            close = text.find(closing, at + len(opening))
            if close < 0:
                break
        kept = keep_after and text.startswith(keep_after, at + len(opening))
        if not kept and close - at <= longest:
            out.append(text[start:at])
            start, dropped = close + len(closing), dropped + 1
            at = text.find(opening, start)
        else:
            at = text.find(opening, at + 1)
    out.append(text[start:])
    return "".join(out), dropped


def defuse(text: str) -> tuple[str, int]:
    """Paragraphs so dense in inline markup that no book writes them (over MAX_MARKS of
    `[]*_`<` making over a tenth of the text) read as their text without those marks:
    markdown-it's link labels are quadratic on such runs ("[" fifty thousand times took 12 s),
    and escaping each mark still cost a token per character. Code is left alone."""
    lines, out, paragraph, fence = text.split("\n"), [], [], ""
    defused = 0

    def flush() -> None:
        nonlocal defused
        marks = sum(line.count(c) for line in paragraph for c in MARK_CHARS)
        if marks > MAX_MARKS and marks * 10 > sum(map(len, paragraph)):
            paragraph[:] = [line.translate(DROP_MARKS) for line in paragraph]
            defused += 1
        out.extend(paragraph)
        paragraph.clear()

    for line in lines:
        marker = _fence_marker(line)
        if fence or marker or not line.strip():
            flush()
            out.append(line)
            if fence and marker.startswith(fence):
                fence = ""
            elif not fence and marker:
                fence = marker
        else:
            paragraph.append(line)
    flush()
    return "\n".join(out), defused


def without_ial(line: str) -> str:
    """A line without a kramdown attribute list at its end ("Text. {: .lead}")."""
    stripped = line.rstrip()
    start = stripped.rfind("{:")
    if not stripped.endswith("}") or start < 0 or len(stripped) - start > 302 or \
            "{" in stripped[start + 1:] or "}" in stripped[start:-1]:
        return line
    return stripped[:start].rstrip()


def statement_ends(line: str, lines: list[str], i: int) -> bool:
    """An MDX `import`/`export` that ends on its own line (no open brace or parenthesis)."""
    return line.count("{") <= line.count("}") and line.count("(") <= line.count(")") \
        and not line.rstrip().endswith((",", "=", "{", "("))
