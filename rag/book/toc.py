"""A book's own table of contents, as its renderer reads it: the chapters in order with the
titles the navigation gives them. mdBook's SUMMARY.md, MkDocs' `nav:`, Jupyter Book's
`_toc.yml`, Sphinx and d2l's ```` ```toc ```` blocks and `{toctree}` directives. Each reader
returns (path relative to the chapters' folder, title) pairs; a path names a file with or
without its extension. Every reader is bounded (entries, depth) and returns [] for what it
cannot read: a broken table of contents falls back to the folder's order, never stops ingest.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

import yaml

from rag.book.frontmatter import load_bounded

MAX_ENTRIES = 5000
MAX_DEPTH = 12
MAX_TOC_BYTES = 2 * 1024 * 1024
TOC_FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*(toc|\{toctree\})[^\n]*$")
OPTION_RE = re.compile(r"^\s*:[\w-]{1,40}:")
Entry = tuple[str, str]


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(MAX_TOC_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _clean(path: str) -> str:
    path = path.split("#", 1)[0].split("?", 1)[0].strip()
    return posixpath.normpath(path) if path else ""


def summary_toc(summary: Path) -> list[Entry]:
    """mdBook's SUMMARY.md: every link to a chapter file, in order, with its text."""
    from rag.book.markdown.reader import parse_tree

    entries: list[Entry] = []

    def walk(node: Any) -> None:
        for child in node.children or []:
            if len(entries) >= MAX_ENTRIES:
                return
            if child.type == "link":
                href = _clean(str(child.attrs.get("href", "")))
                text = "".join(c.content for c in child.children if c.type == "text")
                if href and "://" not in href:
                    entries.append((href, text.strip()))
            else:
                walk(child)

    walk(parse_tree(_read(summary)))
    return entries


def mkdocs_nav(nav: Any) -> list[Entry]:
    """MkDocs' `nav:`: a list of paths, `Title: path` pairs and `Section: [...]` lists."""
    entries: list[Entry] = []

    def walk(items: Any, depth: int) -> None:
        if depth > MAX_DEPTH or not isinstance(items, list):
            return
        for item in items:
            if len(entries) >= MAX_ENTRIES:
                return
            if isinstance(item, str):
                entries.append((_clean(item), ""))
            elif isinstance(item, dict):
                for title, value in item.items():
                    if isinstance(value, str) and "://" not in value:
                        entries.append((_clean(value), str(title)))
                    else:
                        walk(value, depth + 1)

    walk(nav, 0)
    return entries


def jupyter_toc(toc_file: Path) -> list[Entry]:
    """Jupyter Book's `_toc.yml`: the root, then chapters, parts and sections in order."""
    data = _yaml(_read(toc_file))
    entries: list[Entry] = []

    def walk(node: Any, depth: int) -> None:
        if depth > MAX_DEPTH or len(entries) >= MAX_ENTRIES:
            return
        if isinstance(node, list):
            for item in node:
                walk(item, depth + 1)
        elif isinstance(node, dict):
            if isinstance(node.get("file"), str):
                entries.append((_clean(node["file"]), str(node.get("title") or "")))
            for key in ("chapters", "parts", "sections", "subtrees", "entries"):
                walk(node.get(key), depth + 1)

    if isinstance(data, dict) and isinstance(data.get("root"), str):
        entries.append((_clean(data["root"]), ""))
    walk(data, 0)
    return entries


def sphinx_toc(root: Path, start: str) -> list[Entry]:
    """d2l's ```` ```toc ```` blocks and MyST's ```` ```{toctree} ````: from the root page,
    each listed page and then the pages it lists (depth first), paths relative to the page."""
    entries: list[Entry] = []
    seen: set[str] = set()

    def visit(page: str, depth: int) -> None:
        if depth > MAX_DEPTH or page in seen or len(entries) >= MAX_ENTRIES:
            return
        seen.add(page)
        entries.append((page, ""))
        text = _read(_existing(root, page) or root / page)
        folder = posixpath.dirname(page)
        for child in toc_block_entries(text):
            visit(_clean(posixpath.join(folder, child)), depth + 1)

    visit(start, 0)
    return entries


def toc_block_entries(text: str) -> list[str]:
    """The page paths listed in a page's toc blocks."""
    out, fence = [], ""
    for line in text.splitlines():
        if not fence:
            m = TOC_FENCE_RE.match(line)
            fence = m.group(1) if m else ""
            continue
        stripped = line.strip()
        if stripped.startswith(fence[0] * 3):
            fence = ""
        elif stripped and not OPTION_RE.match(stripped):
            target = stripped.rsplit("<", 1)[-1].rstrip(">") if stripped.endswith(">") \
                else stripped
            if "://" not in target and not target.startswith((":", "self")):
                out.append(target)
    return out[:MAX_ENTRIES]


def _existing(root: Path, page: str) -> Path | None:
    for suffix in ("", ".md", ".mdx", ".ipynb", ".rst"):
        path = root / f"{page}{suffix}"
        if path.is_file():
            return path
    return None


def _yaml(text: str) -> Any:
    """YAML with the bounds of chapter frontmatter; tags a config may carry
    (`!!python/name:...`, `!ENV`) are read as plain values, never constructed."""
    try:
        return load_bounded(text, _TolerantLoader)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None


class _TolerantLoader(yaml.SafeLoader):
    pass


def _plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)


_TolerantLoader.add_multi_constructor("", _plain)
read_yaml = _yaml
