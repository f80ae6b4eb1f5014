"""A section's text as the reader shows it: a Markdown chapter's relative links pointed at the
chapter they name in the reader (or left as plain text), a PDF section's text per page.

A book's links are relative to its published site (`./hardware-requirements`,
`../module-2/intro.md#setup`, `/docs/module-1/intro`); followed from the app they would reach
the Streamlit server and its "Page not found". No streamlit import: pure and testable."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping

from pages.components.common.links import reader_href
from rag.answer.citations import page_label
from rag.book.pdf_sections import PAGE_BREAK
from rag.types import Section

LINK_RE = re.compile(r"(!?)\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"  # [text], one level of [] inside
                     r"\(\s*<?([^()\s<>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")  # (href "title")
CODE_SPAN_RE = re.compile(r"(`+)(?:.*?)\1")
FENCE_RE = re.compile(r"^\s*(```|~~~)")
EXTERNAL_RE = re.compile(r"^(?:[a-zA-Z][a-zA-Z0-9+.-]*:|//)")  # https:, mailto:, //host
DOC_SUFFIXES = (".md", ".mdx", ".pdf")
# Backslash-escaped so that a PDF's text is shown as it is printed: `*`, `_`, `#`, `1.`, `$`
# and `:emoji:` would otherwise be Markdown, LaTeX or Streamlit directives.
PDF_SPECIAL_RE = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$:])")


def link_targets(sections: Iterable[Section]) -> dict[str, tuple[str, str, frozenset[str]]]:
    """Every name a link may use for a chapter -> (module_id, chapter_id, its section IDs): its
    file path without the extension (a folder's index file also by the folder) and its URL
    path `module/chapter`, which differs when the frontmatter sets an id."""
    ids: dict[tuple[str, str], set[str]] = {}
    paths: dict[tuple[str, str], str] = {}
    for s in sections:
        ids.setdefault((s.module_id, s.chapter_id), set()).add(s.section_id)
        paths.setdefault((s.module_id, s.chapter_id), s.source_path)
    out: dict[str, tuple[str, str, frozenset[str]]] = {}
    for (module_id, chapter_id), found in ids.items():
        target = (module_id, chapter_id, frozenset(found - {""}))
        path = posixpath.splitext(paths[(module_id, chapter_id)])[0]
        names = [path, posixpath.dirname(path) if posixpath.basename(path) == "index" else "",
                 posixpath.join(module_id, chapter_id)]
        for name in filter(None, names):
            out.setdefault(name.strip("/"), target)
    return out


def resolve_href(href: str, source_path: str, targets: Mapping[str, tuple]) -> str | None:
    """The reader URL of the chapter (and section) a book link names; the href itself when it
    leaves the book (https:, mailto:); None when it names nothing in the book."""
    if EXTERNAL_RE.match(href):
        return href
    path, _, anchor = href.partition("#")
    path = path.partition("?")[0]
    if not path:  # "#anchor": a section of this very chapter
        path = "./" + posixpath.basename(source_path)
    if path.startswith("/"):  # site-absolute: /docs/module/chapter
        path = re.sub(r"^/+(?:docs/)?", "", path)
    else:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(source_path), path))
    path = path.strip("/")
    stem, ext = posixpath.splitext(path)
    target = targets.get(stem if ext in DOC_SUFFIXES else path)
    if target is None or path.startswith(".."):
        return None
    module_id, chapter_id, sections = target
    section = anchor if anchor in sections else ""
    url = f"/docs/{module_id}/{chapter_id}" + (f"#{section}" if section else "")
    return reader_href(url, module_id, chapter_id, section, "")


def resolve_links(text: str, source_path: str, targets: Mapping[str, tuple]) -> str:
    """Markdown with each book-relative link pointed at the reader, or reduced to its text when
    the book has no such chapter; an image stored beside the book shows as its description.
    Code blocks and `code spans` are left alone."""
    def replace(m: re.Match) -> str:
        bang, label, href = m.groups()
        resolved = resolve_href(href, source_path, targets)
        if bang:
            return m.group(0) if EXTERNAL_RE.match(href) else (f"*({label})*" if label else "")
        return label if resolved is None else f"[{label}]({resolved})"

    out, in_code = [], False
    for line in text.split("\n"):
        fence = bool(FENCE_RE.match(line))
        in_code = in_code != fence
        out.append(line if in_code or fence else _outside_code(line, replace))
    return "\n".join(out)


def _outside_code(line: str, replace) -> str:
    out, pos = [], 0
    for m in CODE_SPAN_RE.finditer(line):
        out += [LINK_RE.sub(replace, line[pos:m.start()]), m.group(0)]
        pos = m.end()
    out.append(LINK_RE.sub(replace, line[pos:]))
    return "".join(out)


def pdf_pages(section: Section) -> list[tuple[int | None, str]]:
    """A PDF section's text cut at its page turns: (page, text) in order."""
    page = section.page
    out: list[tuple[int | None, list[str]]] = [(page, [])]
    for line in section.text.split("\n"):
        turns = len(line) - len(line.lstrip(PAGE_BREAK))
        if turns and page is not None:
            page += turns
            out.append((page, []))
        out[-1][1].append(line.lstrip(PAGE_BREAK))
    return [(p, "\n".join(lines).strip()) for p, lines in out if "".join(lines).strip()]


def pdf_markdown(text: str) -> str:
    """PDF text shown as printed: Markdown marks escaped, a "- " bullet kept as a list item."""
    lines = []
    for line in text.split("\n"):
        bullet = line.startswith("- ")
        escaped = PDF_SPECIAL_RE.sub(r"\\\1", line[2:] if bullet else line)
        lines.append(f"- {escaped}" if bullet else escaped)
    return "\n".join(lines)


def pages_caption(section: Section) -> str:
    """"Pages 3–5 of the PDF" for a PDF section; "" for a Markdown one."""
    label = page_label(section.page, section.page_end)
    return f"{label} of {posixpath.basename(section.source_path)}" if label and \
        section.source_path.endswith(".pdf") else ""
