"""Inline Markdown written back canonically (rag.book.markdown.render): text escaped so it reads
back as text, code spans with enough backticks, links with their target, math in dollars; images,
raw HTML tags and footnote marks dropped; MyST roles read as the text the reader sees."""

from __future__ import annotations

import re
from collections import Counter

from markdown_it.tree import SyntaxTreeNode

ESCAPED = str.maketrans({c: f"\\{c}" for c in "\\`*[]<$"})
UNDERSCORE_EDGE_RE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")  # '_' not inside a word
# what would start a block if a line of text began with it: a heading, quote, list item, table,
# setext underline, container, admonition; and "1." / "1)" of an ordered item
LINE_START_RE = re.compile(r"^([ \t]*)([#>\-+*|=:~!?])")
ORDERED_START_RE = re.compile(r"^([ \t]*\d{1,9})([.)])")
TASK_RE = re.compile(r"^\\\[([ xX])\\\] ")
UNRESOLVED_REF_RE = re.compile(r"\[([^\[\]\n]{1,300})\]\[[^\[\]\n]{0,100}\]")


def escape(text: str, line_start: bool = False) -> str:
    """Text as Markdown that reads back as this text; `line_start`: it opens a line, where
    "- x" or "1. x" would start a list."""
    text = UNDERSCORE_EDGE_RE.sub(r"\\_", text.translate(ESCAPED))
    if line_start:
        text = ORDERED_START_RE.sub(r"\1\\\2", LINE_START_RE.sub(r"\1\\\2", text, count=1),
                                    count=1)
    return text


def code_span(content: str) -> str:
    ticks = "`" * (_longest_run(content, "`") + 1)
    pad = " " if content.startswith("`") or content.endswith("`") else ""
    return f"{ticks}{pad}{content}{pad}{ticks}"


def fenced(language: str, content: str) -> str:
    ticks = "`" * max(3, _longest_run(content, "`") + 1)
    return f"{ticks}{language}\n{content.rstrip(chr(10))}\n{ticks}"


def _longest_run(text: str, char: str) -> int:
    best = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        best = max(best, run)
    return best


class InlineRenderer:
    """Inline content of one file; what was dropped without its meaning is counted in
    `missed`, footnote labels cited since the last take_refs() in `refs`."""

    def __init__(self) -> None:
        self.missed: Counter = Counter()
        self.refs: list[str] = []

    def inline(self, node: SyntaxTreeNode) -> str:
        parts, at_start = [], True
        for child in node.children:
            part = self._inline(child, at_start)
            parts.append(part)
            at_start = part == "\n" or (at_start and not part)
        return "".join(parts).strip()

    def _inline(self, node: SyntaxTreeNode, line_start: bool = False) -> str:
        kind = node.type
        if kind == "text":
            return escape(UNRESOLVED_REF_RE.sub(r"\1", node.content), line_start)
        if kind == "code_inline":
            return code_span(node.content)
        if kind == "softbreak":
            return "\n"
        if kind == "hardbreak":
            return "\n"
        if kind in ("strong", "em", "s"):
            mark = {"strong": "**", "em": "*", "s": "~~"}[kind]
            inner = self.inline(node)
            return f"{mark}{inner}{mark}" if inner else ""
        if kind == "link":
            text = self.inline(node)
            href = str(node.attrs.get("href", ""))
            if not text:
                return ""
            href = f"<{href}>" if any(c in href for c in " ()<>") else href
            return f"[{text}]({href})" if href else text
        if kind == "image":
            self.missed["image"] += 1
            return ""
        if kind == "html_inline":
            return ""
        if kind == "math_inline":
            return f"${node.content}$"
        if kind == "math_inline_double":
            return f"$${node.content}$$"
        if kind == "footnote_ref":
            self.refs.append(str(node.meta.get("label", "")))
            return ""
        if kind == "myst_role":
            return self.role(str(node.meta.get("name", "")), node.content)
        self.missed[f"inline: {kind}"] += 1
        return escape(node.content)

    def role(self, name: str, content: str) -> str:
        """A MyST role: its text as the reader sees it."""
        shown = content.split("<")[0].strip() if "<" in content else content
        if name == "math":
            return f"${content}$"
        if name in ("ref", "doc", "term", "abbr", "code", "kbd", "guilabel", "file", "command",
                    "samp", "program", "dfn", "sub", "sup", "menuselection", "class", "func",
                    "meth", "mod", "attr", "obj", "py:class", "py:func"):
            return code_span(shown) if name in ("code", "kbd", "file", "command", "samp") \
                else escape(shown)
        if name not in ("numref", "eq", "cite", "cite:p", "cite:t", "footcite", "label"):
            self.missed[f"role: {name}"] += 1
        return ""

    def plain(self, node: SyntaxTreeNode) -> str:
        """Inline content as plain text (a heading's title, as its renderer slugs it)."""
        parts = []
        for child in node.children or []:
            if child.type in ("text", "code_inline", "math_inline"):
                parts.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                parts.append(" ")
            elif child.type == "myst_role":
                parts.append(child.content.split("<")[0].strip())
            elif child.children:
                parts.append(self.plain(child))
        return "".join(parts)

    def take_refs(self) -> list[str]:
        refs, self.refs = self.refs, []
        return refs
