"""An answer and what it cites as st.markdown text: markers as numbered links, the Sources list
and the passages shown under an answer, each place named "Chapter › Section"."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pages.components.common.links import citation_href
from rag.answer.llm import MARKER_RE


def _md_escape(text: str) -> str:
    return text.replace("$", "\\$").replace("<", "&lt;")


def _link_title(text: str) -> str:
    return text.replace('"', "'").replace("[", "(").replace("]", ")")


def answer_markdown(answer: str, citations: Sequence[dict], base_url: str | None = None) -> str:
    """Markers become numbered links to their sections: "… [S2]" -> "… [[1]](url)".

    With base_url given, links go through reader_href (the in-app reader when it is empty)."""
    numbers = {c["marker"]: (i, c) for i, c in enumerate(citations, start=1)}

    def replace(m: re.Match) -> str:
        found = numbers.get(f"S{m.group(1)}")
        if found is None:
            return ""
        n, c = found
        href = citation_href(c, base_url)
        if not href:
            return f"[{n}]"
        return f'[[{n}]]({href} "{_link_title(cited_name(c))}")'

    return MARKER_RE.sub(replace, _md_escape(answer))


def cited_name(entry: dict) -> str:
    """A citation's (or a passage's) place as the inspector names it, "Chapter › Section": a
    section title alone is often no name at all ("N" in a glossary, "Instructions" in a dozen
    chapters). The section alone when it is the chapter's own text, a pasted passage, or an
    audit row written before citations kept their chapter's title."""
    section = entry.get("section_title") or "Selected text"
    chapter = entry.get("chapter_title") or ""
    return section if not chapter or chapter == section else f"{chapter} › {section}"


def _section_link(entry: dict, base_url: str | None) -> str:
    """A citation's (or a passage's) cited_name, linked when it has somewhere to go."""
    title = _link_title(cited_name(entry))
    href = citation_href(entry, base_url)
    return f"[{title}]({href})" if href else f"**{title}**"


def sources_markdown(citations: Sequence[dict], base_url: str | None = None) -> str:
    """One numbered line per citation: linked section title, page, excerpt."""
    lines = []
    for i, c in enumerate(citations, start=1):
        link = _section_link(c, base_url)
        page = f" · page {c['page']}" if c.get("page") else ""
        if c.get("page") and c.get("page_end") and c["page_end"] != c["page"]:
            page = f" · pages {c['page']}–{c['page_end']}"
        unstable = "" if c.get("stable", True) or not c.get("url") else " · derived anchor"
        excerpt = _md_escape(c.get("excerpt", "")).replace("\n", " ")
        lines.append(f"{i}. {link}{page}{unstable} — *“{excerpt}”*")
    return "\n".join(lines)


def more_markdown(passages: Sequence[dict], base_url: str | None = None) -> str:
    """One line per passage that scored next under an answer: the quote, then its linked section
    and the answerer's probability that it holds the answer."""
    lines = []
    for p in passages:
        text = _md_escape(p.get("text", "")).replace("\n", " ")
        lines.append(f"- *“{text}”* — {_section_link(p, base_url)} · "
                     f"{float(p.get('probability') or 0):.2f}")
    return "\n".join(lines)
