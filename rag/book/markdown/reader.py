"""One Markdown file -> its headings and the canonical Markdown under each (rag.book.parse gives
them ids and makes sections). markdown-it-py reads the block structure (CommonMark, GFM tables and
strikethrough) with mdit-py-plugins for what books add: `:::` containers, `!!!`/`???`
admonitions, footnotes, definition lists, dollar math and MyST roles; the dialects' other
constructs are rewritten first (rag.book.markdown.dialects).

A heading's id is its explicit one when the author wrote it: `{#id}` (Docusaurus, MkDocs
attr_list, Pandoc, kramdown's `{: #id}`), an `<a id>`/`<a name>` in or right above it, a MyST
`(label)=` or d2l `:label:` (both rewritten to `{#id}`); else the renderer derives one
(rag.book.slugs).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.container import container_plugin
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.myst_role import myst_role_plugin

from rag.book.markdown.dialects import Rewriter
from rag.book.markdown.includes import IncludeBudget, Includes
from rag.book.markdown.render import Renderer

HTML_ANCHOR_RE = re.compile(r"<a\s[^<>]{0,300}?\b(?:id|name)\s*=\s*[\"']([^\"'<>\s]{1,200})[\"']",
                            re.I)
ANCHOR_ONLY_RE = re.compile(r"^\s*(?:<a\s[^<>]{0,300}>\s*</a>\s*|<a\s[^<>]{0,300}/>\s*)+$", re.I)
ATTR_TOKEN_RE = re.compile(r"^(?:#[\w:.-]{1,200}|\.[\w-]{1,100}|[\w-]{1,50}=\S{0,200})$")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str  # as plain text, without its {#id}
    anchor: str  # the id the author gave it, or ""
    line: int  # in the file, 1-based (0: unknown)


@dataclass
class Part:
    """A heading and the canonical Markdown blocks under it (heading None: before the first)."""

    heading: Heading | None
    blocks: list[str] = field(default_factory=list)
    has_code: bool = False

    @property
    def text(self) -> str:
        return "\n\n".join(self.blocks)


@dataclass
class ReadFile:
    parts: list[Part]
    missed: Counter  # what was dropped without being interpreted, by kind


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    """CommonMark with raw HTML recognised (so that it can be dropped), GFM tables and
    strikethrough, and the book dialects' block syntax. Dollar math follows Pandoc's rule (no
    space inside the dollars, no digit after the closing one), so "$90k and $5k" stays text."""
    return (MarkdownIt("commonmark", {"html": True})
            .enable(["table", "strikethrough"])
            .use(admon_plugin)
            .use(container_plugin, name="block", validate=lambda *args: True)
            .use(deflist_plugin)
            .use(footnote_plugin)
            .use(dollarmath_plugin, allow_space=False, allow_digits=False, double_inline=True)
            .use(myst_role_plugin))


def parse_tree(text: str) -> SyntaxTreeNode:
    return SyntaxTreeNode(markdown_parser().parse(text))


def read_markdown(text: str, rewriter: Rewriter) -> ReadFile:
    """The file's parts in order; its text is rewritten for the dialects first."""
    rewritten = rewriter.rewrite(text)
    renderer = Renderer(parse_tree)
    root = parse_tree(rewritten.text)
    parts, cited = [Part(None)], {}
    pending = ""  # an <a id> on the line above the next heading
    for node in root.children:
        if node.type == "heading":
            parts.append(Part(_heading(node, renderer, rewritten.origin, pending)))
            pending = ""
            continue
        if node.type == "html_block" and ANCHOR_ONLY_RE.match(node.content):
            found = HTML_ANCHOR_RE.search(node.content)
            pending = found.group(1) if found else pending
            continue
        blocks = renderer.blocks([node])
        parts[-1].blocks.extend(blocks)
        parts[-1].has_code |= any(b.startswith(("```", "~~~")) for b in blocks)
        for label in renderer.take_refs():
            cited.setdefault(label, parts[-1])
    for label, part in cited.items():  # a footnote is read where it is first cited
        if renderer.footnotes.get(label):
            part.blocks.append(renderer.footnotes[label])
    return ReadFile(parts, rewritten.missed + renderer.missed)


def read_text(text: str, mdx: bool = False, myst: bool = False) -> ReadFile:
    """Markdown with no book folder around it (a pasted passage): no include is read."""
    nowhere = Includes(Path("."), (), Path("."), IncludeBudget(0))
    return read_markdown(text, Rewriter(nowhere, {}, mdx=mdx, myst=myst))


def _heading(node: SyntaxTreeNode, renderer: Renderer, origin: list[int],
             pending: str) -> Heading:
    inline = node.children[0] if node.children else None
    title, anchor = split_anchor(" ".join(renderer.plain(inline).split()) if inline else "")
    if not anchor and inline is not None and (found := HTML_ANCHOR_RE.search(inline.content)):
        anchor = found.group(1)
    line = node.map[0] if node.map else -1
    return Heading(level=int(node.tag[1:] or 1), title=title, anchor=anchor or pending,
                   line=origin[line] if 0 <= line < len(origin) else 0)


def split_anchor(title: str) -> tuple[str, str]:
    """"Title {#id .class}" -> ("Title", "id"); kramdown's "{: #id}" too; ("Title", "") when
    the braces hold no attributes."""
    if not title.endswith("}") or "{" not in title:
        return title, ""
    start = title.rfind("{")
    tokens = title[start + 1:-1].strip().removeprefix(":").split()
    if not tokens or not all(ATTR_TOKEN_RE.match(t) for t in tokens):
        return title, ""
    ids = [t[1:] for t in tokens if t.startswith("#")]
    return title[:start].rstrip(), ids[0] if ids else ""
