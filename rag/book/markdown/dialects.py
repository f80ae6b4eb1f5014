"""What the Markdown dialects of real books add to CommonMark, rewritten line by line before
markdown-it reads the text (rag.book.markdown.reader): each construct becomes the CommonMark that
means the same (a heading's label its `{#id}`, a MkDocs `///` block a `:::` container, a tab its
label, an include the lines it names), or is dropped and counted so `rag ingest --report` can say
what Folio did not interpret.

- Docusaurus MDX: `import`/`export` statements, `{/* comments */}`, `{expressions}` on a line of
  their own, JSX component lines (`<Tabs>`, `<TabItem label="Python">` keeps its label);
- MkDocs Material: `/// type | title` blocks, `=== "Tab"` content tabs, `--8<--` snippets,
  FastAPI's `{* file *}` code includes; `!!!`/`???` admonitions are markdown-it's (admon plugin);
- mdBook: `{{#include}}`, `{{#rustdoc_include}}`, `{{#playground}}` with anchors and line ranges;
- MyST / Jupyter Book: `(label)=` targets, `%` comments, `+++` breaks (directives and roles are
  read from markdown-it's tokens);
- d2l: `:label:` after a heading is its id, `:numref:`/`:ref:` read as the title they point at,
  `:cite:`/`:eqref:` and `:begin_tab:` markers dropped;
- Jekyll: Liquid tags, `{{ "path" | relative_url }}` as its path, kramdown `{: .class}` lists;
- HTML: lines holding only layout tags (`<div>`, `<p align=center>`, `<br/>`, `<img>`) go, so
  the Markdown between them is read as Markdown and not as one raw HTML block.
Inside fenced code only includes are expanded: everything else there is the book's code.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from rag.book.markdown.includes import Includes
from rag.book.markdown.spans import defuse, drop_spans, statement_ends, without_ial
from rag.book.slugs import sphinx_slug

FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})")
ATX_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)")
MDX_ESM_RE = re.compile(r"^(?:import|export)[\s{*]")
MDX_EXPRESSION_RE = re.compile(r"^\s*\{[^{}\n]{0,500}\}\s*$")
# a line holding only tags: JSX components (capitalised) and HTML layout elements
TAG = r"</?(?:[A-Z][\w.:-]{0,60}|div|span|p|section|center|details|summary|br|hr|img|a|figure|" \
      r"figcaption|picture|source|video|iframe|font|small|sup|sub|nav|aside|header|footer|" \
      r"main|article)(?:\s[^<>]{0,2000}|/)?>"  # after the name: space, '/' or '>', one way
TAG_LINE_RE = re.compile(rf"^\s*(?:{TAG}\s*){{1,20}}$")
SUMMARY_RE = re.compile(r"^\s*(?:<details[^<>]{0,200}>\s*)?<summary[^<>]{0,200}>(.{0,500}?)"
                        r"</summary>\s*$")
OPEN_JSX_RE = re.compile(r"^\s*<[A-Z][\w.:-]{0,60}(?:\s[^<>]{0,2000})?$")  # props go on below
LABEL_ATTR_RE = re.compile(r"\blabel=[\"']([^\"'\n]{1,80})[\"']")
IMG_RE = re.compile(r"<img\b", re.I)
BLOCK_RE = re.compile(r"^(/{3,})[ \t]*+([A-Za-z][\w-]{0,40})?[ \t]*+(?:\|[ \t]*+(.{0,200}))?$")
TAB_RE = re.compile(r"^(=== |===\+ )\"(.{0,120})\"\s*$")
MYST_TARGET_RE = re.compile(r"^\(([\w.:-]{1,120})\)=\s*$")
LABEL_RE = re.compile(r"^:label:`([^`\n]{1,120})`\s*$")
ROLE_RE = re.compile(r":([a-z]{2,12}):`([^`\n]{0,300})`")
D2L_LINE_RE = re.compile(r"^\s*(?::(?:begin_tab|end_tab|width|eqlabel|bibliography):(?:`[^`\n]"
                         r"{0,300}`)?\s*)+$")
LIQUID_COMMENT_OPEN = re.compile(r"\{%-?\s*comment\s*-?%\}")
LIQUID_COMMENT_CLOSE = re.compile(r"\{%-?\s*endcomment\s*-?%\}")
LIQUID_RAW_RE = re.compile(r"\{%-?[ \t]{0,20}(?:end)?raw[ \t]{0,20}-?%\}")
LIQUID_PATH_RE = re.compile(r"\{\{\s*[\"']([^\"'\n]{0,300})[\"']\s*\|\s*(?:relative_url|"
                            r"absolute_url|url)\s*\}\}")
IAL_LINE_RE = re.compile(r"^\s*+\{:[^\n]{0,300}\}\s*$")
EMPTY_PARENS_RE = re.compile(r"[ \t]?\([ \t]{0,3}\)")
SPACE_BEFORE_RE = re.compile(r"(?<![ \t])[ \t]++([.,;:!?)])")
SPHINX_STYLE_ROLES = ("numref", "ref", "eqref", "cite", "citet", "citep", "label", "doc", "term")


@dataclass
class Rewritten:
    """The text markdown-it reads, and what was dropped without being interpreted, by kind."""

    text: str
    missed: Counter = field(default_factory=Counter)
    origin: list[int] = field(default_factory=list)  # each line's line in the file read


def _fence_marker(line: str) -> str:
    m = FENCE_RE.match(line)
    return m.group(1) if m else ""


class Rewriter:
    """One file's rewrite; `labels` maps a d2l/MyST label to the title of what it names (the
    whole book's, so `:numref:` reads as the section it points at)."""

    def __init__(self, includes: Includes, labels: dict[str, str], mdx: bool, myst: bool
                 ) -> None:
        self.includes, self.labels, self.mdx, self.myst = includes, labels, mdx, myst
        self.missed: Counter = Counter()
        self.out: list[str] = []
        self.origin: list[int] = []  # each output line's line in the file read (1-based)
        self.line = 0
        self.pending_target = ""  # a MyST (label)= waiting for its heading
        self.raw = False  # inside a Liquid {% raw %} block

    def emit(self, *lines: str) -> None:
        self.out.extend(lines)
        self.origin.extend([self.line] * len(lines))

    def rewrite(self, text: str) -> Rewritten:
        text, dense = defuse(text)
        if dense:
            self.missed["markup too dense to read (read as text)"] += dense
        lines = text.splitlines()
        fence, i = "", 0
        skipping = ""  # "esm", "comment", "liquid", "jsx": what a run of lines belongs to
        while i < len(lines):
            line = lines[i]
            i += 1
            self.line = i
            marker = _fence_marker(line)
            if fence:
                if marker and marker[0] == fence[0] and len(marker) >= len(fence) \
                        and not line.strip()[len(marker):].strip():
                    fence = ""
                    self.emit(line)
                elif not self._include(line, inside_code=True):
                    self.emit(line)
                continue
            if skipping:
                skipping = self._skip(line, skipping)
                continue
            if marker:
                fence = marker
                self.emit(line)
                continue
            skipping = self._prose(line, lines, i)
            if skipping == "tab":  # a content tab: its indented body read dedented
                i = self._tab_body(lines, i)
                skipping = ""
        return Rewritten("\n".join(self.out) + "\n", self.missed, self.origin)

    def _skip(self, line: str, what: str) -> str:
        """Lines of a multi-line construct being dropped; what is still open after this one."""
        if what == "esm":
            return "" if not line.strip() else what
        if what == "comment":
            end = line.find("*/}")
            if end < 0:
                return what
            return self._prose(line[end + 3:], [], 0) or ""
        if what == "liquid":
            close = LIQUID_COMMENT_CLOSE.search(line)
            return "" if close else what
        if what == "jsx":
            return "" if line.rstrip().endswith(">") else what
        return ""

    def _prose(self, line: str, lines: list[str], i: int) -> str:
        """Rewrite one line outside code; returns what multi-line construct it opens ("")."""
        stripped = line.strip()
        if self.mdx:
            if MDX_ESM_RE.match(line):
                self.emit("")
                return "esm" if not statement_ends(line, lines, i) else ""
            line = drop_spans(line, "{/*", "*/}", longest=len(line))[0]
            if "{/*" in line:
                self.emit(line[:line.find("{/*")])
                return "comment"
            if MDX_EXPRESSION_RE.match(line):
                self.missed["MDX expression"] += 1
                self.emit("")
                return ""
        if LIQUID_COMMENT_OPEN.search(line):
            self.emit("")
            return "" if LIQUID_COMMENT_CLOSE.search(line) else "liquid"
        if self._include(line, inside_code=False):
            return ""
        if self._tag_line(line, stripped):
            return ""
        if OPEN_JSX_RE.match(line) and not line.rstrip().endswith(">"):
            self.emit("")
            self.missed["JSX component"] += 1
            return "jsx"
        if self._mkdocs(line):
            return "tab" if TAB_RE.match(line) else ""
        if self._labels(line, stripped):
            return ""
        if self.myst and (stripped.startswith("%") or stripped == "+++"):
            self.emit("")
            return ""
        if IAL_LINE_RE.match(line):
            self.emit("")
            return ""
        self.emit(self._inline(line))
        return ""

    def _tag_line(self, line: str, stripped: str) -> bool:
        if summary := SUMMARY_RE.match(line):  # <summary>Why ...?</summary>: a line of its own
            self.emit("", summary.group(1).strip(), "")
            return True
        if not stripped.startswith("<") or not TAG_LINE_RE.match(line):
            return False
        if IMG_RE.search(line):
            self.missed["image"] += 1
        label = LABEL_ATTR_RE.search(line)
        self.emit(*["", f"{label.group(1)}:", ""] if label else [""])
        if stripped.endswith("/>") and stripped[1:2].isupper() and not label:
            self.missed["JSX component"] += 1
        return True

    def _mkdocs(self, line: str) -> bool:
        """A `///` block's fence as a `:::` container's; a content tab's title as its label."""
        if block := BLOCK_RE.match(line):
            colons = ":" * len(block.group(1))
            kind, title = block.group(2) or "", (block.group(3) or "").strip()
            if not kind:
                self.emit(colons)
            elif kind in ("tab", "details"):  # a tab or a collapsible: its title labels it
                self.emit(f"{colons} note", "", f"{title}:" if title else "")
            else:
                self.emit(f"{colons} {kind}" + (f"[{title}]" if title else ""))
            return True
        if tab := TAB_RE.match(line):
            self.emit("", f"{tab.group(2)}:", "")
            return True
        return False

    def _tab_body(self, lines: list[str], i: int) -> int:
        """A content tab's body is indented four spaces: read it dedented, up to the first line
        that is not indented; returns where reading goes on."""
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
            i += 1
            self.line = i
            self.emit(lines[i - 1][4:])
        return i

    def _labels(self, line: str, stripped: str) -> bool:
        """d2l's `:label:` after a heading, and MyST's `(label)=` before one, as its {#id}."""
        if target := MYST_TARGET_RE.match(stripped):
            self.pending_target = target.group(1)
            return True
        if label := LABEL_RE.match(stripped):
            previous = next((k for k in range(len(self.out) - 1, -1, -1)
                             if self.out[k].strip()), -1)
            if previous >= 0 and ATX_RE.match(self.out[previous]) \
                    and "{#" not in self.out[previous]:
                self.out[previous] += f" {{#{sphinx_slug(label.group(1))}}}"
            return True
        if D2L_LINE_RE.match(line):
            self.emit("")
            return True
        if self.pending_target and ATX_RE.match(line):
            self.emit(f"{line.rstrip()} {{#{self.pending_target}}}")
            self.pending_target = ""
            return True
        return False

    def _inline(self, line: str) -> str:
        """Roles, Liquid and kramdown marks inside a line of prose."""
        if ":" in line and "`" in line:
            line, roles = ROLE_RE.subn(self._role, line)
            if roles:  # "(:cite:`x`)" and "see :eqref:`y`." leave no "()" or " ." behind
                line = SPACE_BEFORE_RE.sub(r"\1", EMPTY_PARENS_RE.sub("", line))
        if "{" not in line:
            return line
        # {% raw %} ... {% endraw %} keeps what it holds, over one line or many
        pieces = LIQUID_RAW_RE.split(line)
        out = []
        for k, piece in enumerate(pieces):
            if k:
                self.raw = not self.raw
            out.append(piece if self.raw else self._liquid(piece))
        return without_ial("".join(out))

    def _liquid(self, text: str) -> str:
        if "}}" in text:
            text = LIQUID_PATH_RE.sub(lambda m: m.group(1), text)
        text, tags = drop_spans(text, "{%", "%}")
        text, variables = drop_spans(text, "{{", "}}", keep_after="#")
        self.missed["Liquid tag"] += tags
        self.missed["Liquid variable"] += variables
        return text

    def _role(self, m: re.Match) -> str:
        role, target = m.group(1), m.group(2)
        if role not in SPHINX_STYLE_ROLES:
            return m.group(0)
        if role in ("numref", "ref", "doc"):
            title = self.labels.get(target.split("<")[-1].strip(" >"), "")
            return title or target.split("<")[0].strip() if role != "numref" else title
        if role == "term":
            return target.split("<")[0].strip()
        return ""  # a citation key or an equation number reads as nothing

    def _include(self, line: str, inside_code: bool) -> bool:
        """An include directive: its lines in its place (or dropped and counted)."""
        found = self.includes.expand(line, inside_code)
        if found is None:
            return False
        lines, problem = found
        if problem:
            self.missed[problem] += 1
        self.emit(*lines)
        return True

