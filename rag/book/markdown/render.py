"""markdown-it's syntax tree written back as one canonical Markdown: what a section's text holds
(the Book page shows it, chunks and quotable units are cut from it). Paragraphs keep their lines,
lists are `-` or `1.` with nested items indented, code is fenced with a fence longer than any run
inside it, tables are pipe tables, math is `$...$`/`$$`, links keep their target (reference links
resolved), and text is escaped so the canonical form reads back as the same structure. Images,
raw HTML tags, comments, footnote marks and directives' options are not carried; what was
dropped without its meaning is counted in `missed`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from markdown_it.tree import SyntaxTreeNode

from rag.book.markdown.html_text import html_text
from rag.book.markdown.text import (
    ORDERED_START_RE,
    TASK_RE,
    InlineRenderer,
    escape,
    fenced,
)

ADMONITIONS = frozenset("""note tip info warning danger caution important attention error hint
seealso success question failure bug example quote abstract todo check details admonition
dropdown tldr faq summary""".split())
CODE_DIRECTIVES = frozenset({"code-cell", "code-block", "code", "sourcecode"})
DROPPED_DIRECTIVES = frozenset({"toctree", "bibliography", "eval-rst", "raw", "only",
                                "literalinclude", "include", "tableofcontents"})
DROPPED_FENCES = frozenset({"toc"})  # d2l's table of contents, read by rag.book.structure
MAX_DEPTH = 8  # directives and containers nested deeper are not read (a nesting bomb)
OPTION_RE = re.compile(r"^:[\w-]{1,40}:")

Parse = Callable[[str], SyntaxTreeNode]


class Renderer(InlineRenderer):
    """Blocks and inline text of one file; `parse` reads a directive's or an HTML block's
    content as Markdown (nested ones to MAX_DEPTH)."""

    def __init__(self, parse: Parse) -> None:
        super().__init__()
        self.parse = parse
        self.footnotes: dict[str, str] = {}
        self.depth = 0

    # ---- blocks ---------------------------------------------------------------------------
    def blocks(self, nodes: list[SyntaxTreeNode]) -> list[str]:
        out = []
        for node in nodes:
            out.extend(b for b in self.block(node) if b.strip())
        return out

    def block(self, node: SyntaxTreeNode) -> list[str]:
        kind = node.type
        if kind == "paragraph":
            return [self.inline(node.children[0])] if node.children else []
        if kind == "heading":  # inside a list, quote or container: a bold line, not a section
            return [f"**{self.inline(node.children[0])}**"] if node.children else []
        if kind in ("bullet_list", "ordered_list"):
            return [self.list(node, 0)]
        if kind == "fence":
            return self.fence(node.info.strip(), node.content)
        if kind == "code_block":
            return [fenced("", node.content)]
        if kind == "blockquote":
            inner = "\n\n".join(self.blocks(node.children))
            return ["\n".join(f"> {line}".rstrip() for line in inner.split("\n"))]
        if kind == "table":
            return [self.table(node)]
        if kind == "hr":
            return ["---"]
        if kind in ("math_block", "math_block_label", "amsmath"):
            return [f"$$\n{node.content.strip()}\n$$"]
        if kind == "html_block":
            return self.html(node.content)
        if kind == "admonition":
            title = node.meta.get("tag", "") if not node.children else ""
            body = [c for c in node.children if c.type != "admonition_title"]
            heads = [self.plain(c.children[0]) for c in node.children
                     if c.type == "admonition_title" and c.children]
            return self.labelled((heads[0] if heads else title).strip(), body)
        if kind.startswith("container_"):
            return self.container(node.info.strip(), node.children)
        if kind == "dl":
            return self.definitions(node)
        if kind == "footnote_block":
            self.collect_footnotes(node)
            return []
        if kind in ("front_matter", "footnote_anchor", "myst_target", "myst_line_comment"):
            return []
        self.missed[f"block: {kind}"] += 1
        return self.blocks(node.children) if node.children else []

    def labelled(self, label: str, children: list[SyntaxTreeNode]) -> list[str]:
        """An admonition or tab: its title as a label line ("Tip:"), then its blocks."""
        body = self.nested(lambda: self.blocks(children))
        if not label:
            return body
        if body and _prose(body[0]):  # "Tip: Log the target ..." says what the tip is
            return [f"{escape(label)}: {body[0]}", *body[1:]]
        return [f"{escape(label)}:", *body]

    def container(self, info: str, children: list[SyntaxTreeNode]) -> list[str]:
        """`:::tip[Title]`, `:::note Title`, MyST `:::{note}`: an admonition's label and body."""
        kind, _, title = info.partition("[")
        title = title.rsplit("]", 1)[0] if title else ""
        kind = kind.strip().strip("{}")
        if not title and " " in kind:
            kind, title = kind.split(" ", 1)
        kind = kind.strip("{}").lower()
        label = title.strip() or (kind.capitalize() if kind in ADMONITIONS else "")
        return self.labelled(label, children)

    def nested(self, read: Callable[[], list[str]]) -> list[str]:
        if self.depth >= MAX_DEPTH:
            self.missed["nested too deep"] += 1
            return []
        self.depth += 1
        try:
            return read()
        finally:
            self.depth -= 1

    def fence(self, info: str, content: str) -> list[str]:
        """A fenced block: code (d2l's `{.python .input}` is Python), or a MyST directive."""
        if info.startswith("{"):
            name, _, rest = info[1:].partition("}")
            name, rest = name.strip(), rest.strip()
            if name.startswith("."):  # pandoc attributes: {.python .input}
                return [fenced(name.split()[0][1:], content)]
            return self.directive(name.lower(), rest, content)
        language = info.split()[0] if info else ""
        if language.lower() in DROPPED_FENCES:
            return []
        return [fenced(language, content)]

    def directive(self, name: str, argument: str, content: str) -> list[str]:
        body = _without_options(content)
        if name in CODE_DIRECTIVES:
            return [fenced(argument.split()[0] if argument else "", body)]
        if name == "math":
            return [f"$$\n{body.strip()}\n$$"]
        if name in DROPPED_DIRECTIVES:
            self.missed[f"directive: {name}"] += name not in ("toctree", "tableofcontents")
            return []
        if name in ("figure", "image"):
            self.missed["image"] += 1
        elif name not in ADMONITIONS:
            self.missed[f"directive: {name}"] += 1
        label = argument if name in ("admonition", "dropdown") or (
            name in ADMONITIONS and argument) else name.capitalize() if name in ADMONITIONS \
            else ""
        tree = self.parse(body) if self.depth < MAX_DEPTH else None
        return self.labelled(label, tree.children if tree else [])

    def list(self, node: SyntaxTreeNode, indent: int) -> str:
        ordered = node.type == "ordered_list"
        start = _start(node) if ordered else 1
        lines = []
        for k, item in enumerate(node.children):
            marker = f"{start + k}." if ordered else "-"
            width = indent + len(marker) + 1
            pad = " " * width
            head, rest = "", []
            for n, child in enumerate(item.children):
                if child.type in ("bullet_list", "ordered_list"):
                    rest.extend(self.nested(lambda c=child, w=width: [self.list(c, w)]))
                elif n == 0 and child.type == "paragraph":
                    head = self.inline(child.children[0]) if child.children else ""
                else:
                    rest.extend("\n".join(pad + line if line else line
                                          for line in block.split("\n"))
                                for block in self.block(child))
            head = TASK_RE.sub(r"[\1] ", head, count=1)  # "[ ] task": a checklist's box
            head_lines = head.split("\n")
            lines.append(" " * indent + f"{marker} {head_lines[0]}".rstrip())
            lines.extend(pad + line for line in head_lines[1:])
            lines.extend(r for r in rest if r.strip())
        return "\n".join(lines)

    def table(self, node: SyntaxTreeNode) -> str:
        rows = [[self.inline(cell.children[0]).replace("|", "\\|").replace("\n", " ")
                 if cell.children else "" for cell in row.children]
                for part in node.children for row in part.children]
        if not rows:
            return ""
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        lines = [f"| {' | '.join(r)} |" for r in rows]
        lines.insert(1, "|" + " --- |" * width)
        return "\n".join(lines)

    def definitions(self, node: SyntaxTreeNode) -> list[str]:
        """A definition list as "Term: definition" paragraphs."""
        out, term = [], ""
        for child in node.children:
            if child.type == "dt":
                term = self.inline(child.children[0]) if child.children else ""
            elif child.type == "dd":
                body = self.blocks(child.children)
                if body and term:
                    body[0] = f"{term}: {body[0]}"
                out.extend(body or ([term] if term else []))
        return out

    def html(self, content: str) -> list[str]:
        """A raw HTML block: a comment says nothing to a reader; other HTML is read as its text
        (its layout is lost: counted)."""
        text = html_text(content)
        if not text.strip():
            if "<img" in content.lower():
                self.missed["image"] += 1
            return []
        self.missed["raw HTML"] += 1
        return [escape(paragraph, line_start=True) for paragraph in text.split("\n\n")
                if paragraph.strip()]

    def collect_footnotes(self, node: SyntaxTreeNode) -> None:
        for note in node.children:
            label = str(note.meta.get("label", ""))
            self.footnotes[label] = " ".join(self.blocks(note.children))

def _prose(block: str) -> bool:
    """A paragraph of text (not a list, code, table, quote, equation or a bold title line)."""
    bold_line = block.startswith("**") and block.rstrip().rstrip(":").endswith("**") \
        and "\n" not in block
    return bool(block) and not block.startswith(("- ", "```", "~~~", "|", ">", "$$")) \
        and not ORDERED_START_RE.match(block) and not bold_line


def _start(node: SyntaxTreeNode) -> int:
    try:
        return max(0, min(int(node.attrs.get("start", 1)), 999_999_999))
    except (TypeError, ValueError):
        return 1


def _without_options(content: str) -> str:
    """A MyST directive's body without its options (`:name: value` lines or a `---` block)."""
    lines = content.split("\n")
    if lines and lines[0].strip() == "---":
        end = next((n for n in range(1, len(lines)) if lines[n].strip() == "---"), 0)
        lines = lines[end + 1:]
    while lines and OPTION_RE.match(lines[0]):
        lines = lines[1:]
    return "\n".join(lines)
