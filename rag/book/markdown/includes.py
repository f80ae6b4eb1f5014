"""Include directives, resolved the way their renderer resolves them when the file is in the
book's folder, else dropped and counted ("include not found" in `rag ingest --report`):

- mdBook `{{#include file.rs}}`, `{{#include file.rs:anchor}}` (the lines between `ANCHOR: anchor`
  and `ANCHOR_END: anchor`), `{{#include file.rs:2:10}}` (1-based line ranges, either end open),
  and the same for `{{#rustdoc_include}}` and `{{#playground}}`; `{{#title}}` is dropped;
- pymdownx snippets `--8<-- "file"`;
- FastAPI's `{* ../../docs_src/file.py hl[3] *}`, read as a fenced block in the file's language.

A path is tried beside the including file, then at the book's root and the project folder above
it; a file outside the folder the reader pointed Folio at is never read (a book linking
/etc/passwd), and an include is capped in size and in number per book.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MDBOOK_RE = re.compile(r"^\s*\{\{#(include|rustdoc_include|playground|rust|title)\s+"
                       r"([^}\n]{1,500})\}\}\s*$")
SNIPPET_RE = re.compile(r"^\s*-{1,3}8<-{1,3}\s+[\"']([^\"'\n]{1,500})[\"']\s*$")
CODE_INCLUDE_RE = re.compile(r"^\s*\{\*\s+(\S{1,500})[^*\n]{0,300}\*\}\s*$")
ANCHOR_LINE_RE = re.compile(r"\bANCHOR(?:_END)?:\s*[\w-]{1,100}")
MAX_INCLUDE_BYTES = 512 * 1024
MAX_INCLUDES = 2000  # per book
LANGUAGES = {".py": "python", ".rs": "rust", ".js": "javascript", ".ts": "typescript",
             ".sh": "bash", ".toml": "toml", ".yml": "yaml", ".yaml": "yaml", ".json": "json",
             ".html": "html", ".css": "css", ".go": "go", ".java": "java", ".c": "c",
             ".cpp": "cpp", ".md": "markdown", ".txt": "text", ".sql": "sql"}
NOT_FOUND = "include not found"


@dataclass
class IncludeBudget:
    """How many includes the whole book may still expand."""

    left: int = MAX_INCLUDES


class Includes:
    """The include directives of one file at `here` (its folder); `bases` are the other
    folders a path may be relative to, `allowed` the folder nothing may be read outside."""

    def __init__(self, here: Path, bases: tuple[Path, ...], allowed: Path,
                 budget: IncludeBudget) -> None:
        self.here, self.bases, self.budget = here, bases, budget
        self.allowed = allowed.resolve()

    def expand(self, line: str, inside_code: bool) -> tuple[list[str], str] | None:
        """None when `line` is no include; else the lines it stands for and, when it could not
        be read, why (a kind for the report)."""
        if "{{#" in line and (m := MDBOOK_RE.match(line)):
            if m.group(1) == "title":
                return [], ""
            path, _, selector = m.group(2).strip().partition(":")
            return self._read(path, selector, fence="")
        if "8<" in line and (m := SNIPPET_RE.match(line)):
            return self._read(m.group(1), "", fence="")
        if not inside_code and "{*" in line and (m := CODE_INCLUDE_RE.match(line)):
            path = m.group(1)
            return self._read(path, "", fence=LANGUAGES.get(Path(path).suffix.lower(), ""))
        return None

    def _read(self, name: str, selector: str, fence: str | None) -> tuple[list[str], str]:
        found = self._find(name.strip()) if self.budget.left > 0 else None
        if found is None:
            return [], NOT_FOUND
        self.budget.left -= 1
        try:
            with open(found, "rb") as f:
                raw = f.read(MAX_INCLUDE_BYTES + 1)
        except OSError:
            return [], NOT_FOUND
        if len(raw) > MAX_INCLUDE_BYTES:
            return [], "include too large"
        text = raw.decode("utf-8", errors="replace")
        lines = select_lines(text.splitlines(), selector)
        return ([f"```{fence}", *lines, "```"] if fence else lines), ""

    def _find(self, name: str) -> Path | None:
        if not name or "\0" in name:
            return None
        for base in (self.here, *self.bases):
            try:
                path = (base / name).resolve()
            except (OSError, RuntimeError, ValueError):
                continue
            if path.is_relative_to(self.allowed) and path.is_file():
                return path
        return None


def select_lines(lines: list[str], selector: str) -> list[str]:
    """mdBook's selection: an anchor's lines, a 1-based range ("2", "2:10", ":10", "2:"), or
    all; every ANCHOR line left out."""
    selector = selector.strip()[:200]
    first, colon, last = selector.partition(":")
    if selector and all(_small_number(part) or not part for part in (first, last)):
        begin = max(int(first) - 1, 0) if first else 0
        stop = int(last) if last else (len(lines) if colon else begin + 1)
        lines = lines[begin:stop]
    elif selector:
        start = next((n for n, line in enumerate(lines)
                      if f"ANCHOR: {selector}" in line and ANCHOR_LINE_RE.search(line)), None)
        if start is None:
            return []
        end = next((n for n in range(start + 1, len(lines))
                    if f"ANCHOR_END: {selector}" in lines[n]), len(lines))
        lines = lines[start + 1:end]
    return [line for line in lines if not ANCHOR_LINE_RE.search(line)]


def _small_number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) < 10
