"""Stage 4a: markers -> citations built from section IDs at answer time; URLs are never stored."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rag.answer.llm import MARKER_RE, says_not_covered
from rag.book.inline import plain_text
from rag.types import Chunk, Citation, Hit

EXCERPT_MIN_WORDS, EXCERPT_MAX_WORDS = 30, 50
SENTENCE_END_RE = re.compile(r"(?<=[.!?\]])\s+(?!\[S\d)")  # a trailing [Sn] stays


@dataclass(frozen=True)
class CitedAnswer:
    text: str  # the answer with only valid markers left
    citations: tuple[Citation, ...]
    unresolved: int  # markers that named no excerpt, removed
    uncited_sentences: int


# A book's published URLs, by its renderer, when settings give no url_template: {page} is the
# chapter file's path without its extension (README is index), {page_dir} the same without a
# trailing /index (the directory URLs MkDocs and Jekyll publish).
RENDERER_URLS = {
    "docusaurus": "{base_url}/docs/{module_id}/{chapter_id}#{section_id}",
    "mkdocs": "{base_url}/{page_dir}/#{section_id}",
    "jekyll": "{base_url}/{page_dir}/#{section_id}",
    "mdbook": "{base_url}/{page}.html#{section_id}",
    "sphinx": "{base_url}/{page}.html#{section_id}",
    "jupyterbook": "{base_url}/{page}.html#{section_id}",
    "d2l": "{base_url}/{page}.html#{section_id}",
    "github": "{base_url}/{source_path}#{section_id}",
}


def url_template_for(template: str, renderer: str) -> str:
    """The settings' template, or (when it is empty) the one the book's renderer publishes."""
    return template or RENDERER_URLS.get(renderer, RENDERER_URLS["docusaurus"])


def page_paths(source_path: str) -> tuple[str, str]:
    """({page}, {page_dir}) of a chapter file: "guide/README.md" -> ("guide/index", "guide")."""
    stem = source_path.rsplit(".", 1)[0] if "." in source_path.rsplit("/", 1)[-1] \
        else source_path
    head, _, name = stem.rpartition("/")
    page = f"{head}/index" if head and name == "README" else \
        ("index" if name == "README" else stem)
    directory = page[:-len("/index")] if page.endswith("/index") else \
        ("" if page == "index" else page)
    return page, directory


def build_url(template: str, base_url: str, chunk: Chunk) -> str:
    """The section's link on the published book: its id, explicit or derived as the renderer
    derives it (a derived one is reported as such, as it changes with the heading's wording);
    a chunk before the chapter's first heading links to the chapter."""
    if chunk.source != "book":
        return ""
    section = chunk.section_id
    page, page_dir = page_paths(chunk.source_path)
    url = template.format(base_url=base_url.rstrip("/"), module_id=chunk.module_id,
                          chapter_id=chunk.chapter_id, section_id=section, page=page,
                          page_dir=page_dir, source_path=chunk.source_path)
    url = url.rstrip("#") if not section else url
    scheme, sep, rest = url.rpartition("://")
    return f"{scheme}{sep}{re.sub(r'/{2,}', '/', rest)}"


def section_names(chunks: Sequence[Chunk]) -> dict[str, str]:
    """The name of each of the book's sections that shares its title with another section of
    its chapter, with the heading it sits under: "Option 1: On-Premise Lab (High CapEx) ›
    Advantages", not "Advantages" three times in "Lab Infrastructure Options" (section key ->
    name; the other sections are named by their title)."""
    paths: dict[tuple[str, str], dict[str, tuple[str, ...]]] = {}
    for c in chunks:
        if c.source == "book":
            paths.setdefault((c.chapter_id, c.section_title), {})[c.section_key] = c.heading_path
    return {key: f"{path[-2]} › {path[-1]}" for same in paths.values() if len(same) > 1
            for key, path in same.items() if len(path) > 2}


def section_name(chunk: Chunk, names: Mapping[str, str] | None = None) -> str:
    """A chunk's section as citations name it: section_names()' name, else its title."""
    return (names or {}).get(chunk.section_key, chunk.section_title)


def book_section_names(index) -> dict[str, str]:
    """section_names() of a loaded BookIndex's book, once per index ({} without one)."""
    if index is None:
        return {}
    key = ("section_names", id(index.chunks))
    if key not in index.derived:
        index.derived[key] = section_names(index.chunks)
    return index.derived[key]


def place_name(chunk: Chunk, names: Mapping[str, str]) -> str:
    """"Chapter › Section" (section_name), or the chapter's title alone for its opening text."""
    section = section_name(chunk, names)
    return chunk.chapter_title if section == chunk.chapter_title else \
        f"{chunk.chapter_title} › {section}"


def chunk_location(chunk: Chunk, template: str, base_url: str,
                   names: Mapping[str, str] | None = None) -> dict:
    """Where a chunk is, as a citation names it: its link (build_url), ids, section (named apart
    from a same-titled one of its chapter: section_names) and chapter titles and pages."""
    return {"url": build_url(template, base_url, chunk), "chunk_id": chunk.chunk_id,
            "module_id": chunk.module_id, "chapter_id": chunk.chapter_id,
            "section_id": chunk.section_id, "section_title": section_name(chunk, names),
            "chapter_title": chunk.chapter_title, "page": chunk.page, "page_end": chunk.page_end,
            "stable": chunk.stable and bool(chunk.section_id)}


def pick_excerpt(chunk_text: str, near: str = "") -> str:
    """30-50 words of the chunk's text as a reader sees it (rag.book.inline.plain_text: a link
    keeps its text, which in the app would lead to "Page not found"), starting at the sentence
    the answer quoted when there is one."""
    words = plain_text(chunk_text).split()
    start = 0
    if near:
        # compared without Markdown marks: quotes are cleaned, chunk texts are not
        plain = [_unmarked(w) for w in words]
        probe = [_unmarked(w) for w in near.split()[:6]]
        for i in range(len(plain) - len(probe) + 1):
            if plain[i:i + len(probe)] == probe:
                start = i
                break
    start = max(0, min(start, len(words) - EXCERPT_MIN_WORDS))
    picked = words[start:start + EXCERPT_MAX_WORDS]
    text = re.sub(r"\*\*|__|`", "", " ".join(picked)).replace('"', "'")
    ellipsis = "…" if start + EXCERPT_MAX_WORDS < len(words) else ""
    return ("…" if start else "") + text + ellipsis


def _unmarked(word: str) -> str:
    return re.sub(r"\*\*|__|`|\[|\]\([^)]*\)", "", word)


def _contains(text: str, quote: str) -> bool:
    probe = " ".join(_unmarked(w) for w in quote.split()[:6])
    return probe in " ".join(_unmarked(w) for w in text.split())


def quotes_by_marker(text: str) -> dict[int, list[str]]:
    """Which quoted units each marker closes: "A. [S1] B. [S2]" -> {1: ["A."], 2: ["B."]}."""
    out: dict[int, list[str]] = {}
    start = 0
    for m in MARKER_RE.finditer(text):  # as `(.*?)\s*\[S(\d+)\]` did, in linear time (that was
        head = text[start:m.start()].rstrip()  # cubic in a run of blanks: 1,000 took 4.4 s)
        body = head[head.rfind("\n") + 1:].strip()  # the marker's own line
        if body:
            out.setdefault(int(m.group(1)), []).append(body)
        start = m.end()
    return out


def page_label(page: int | None, page_end: int | None = None) -> str:
    """"Page 42", "Pages 42–43" (a chunk running over a page turn), or "" when unknown."""
    if not page:
        return ""
    return f"Pages {page}–{page_end}" if page_end and page_end != page else f"Page {page}"


def display_text(chunk: Chunk, excerpt: str, names: Mapping[str, str] | None = None) -> str:
    """SPEC §3: [Source: Section Title (Page 42) - "excerpt"]; the page only when known."""
    title = "Selected text" if chunk.source == "selection" else section_name(chunk, names)
    pages = page_label(chunk.page, chunk.page_end)
    return f'[Source: {title}{f" ({pages})" if pages else ""} - "{excerpt}"]'


def count_uncited(text: str, quotes: Sequence[str] = ()) -> int:
    """Sentences of four words or more that no marker follows. The extractive answer's `quotes`
    count as one sentence each, cited by their marker: a quoted unit with full stops inside it
    ("Tobin, J., et al. (2017). "Domain ..." IROS. [S2]") is not several uncited sentences."""
    for quote in sorted(quotes, key=len, reverse=True):
        text = text.replace(quote, "Quoted.")
    sentences = [s for s in SENTENCE_END_RE.split(text) if len(s.split()) >= 4]
    return sum(1 for s in sentences if not MARKER_RE.search(s) and not says_not_covered(s))


def cite(draft_text: str, hits: Sequence[Hit], template: str, base_url: str,
         quotes: Sequence[str] = (), siblings: Sequence[Hit] = (),
         names: Mapping[str, str] | None = None) -> CitedAnswer:
    """Keep markers that name a retrieved excerpt, drop the rest, and build one citation each
    (`names`: section_names())."""
    unresolved = 0

    def keep(match: re.Match) -> str:
        nonlocal unresolved
        if 1 <= int(match.group(1)) <= len(hits):
            return match.group(0)
        unresolved += 1
        return ""

    text = re.sub(r"(?<!\s)\s++([.,;])", r"\1", MARKER_RE.sub(keep, draft_text)).strip()
    citations = []
    quoted = quotes_by_marker(text) if quotes else {}
    for n in dict.fromkeys(int(m) for m in MARKER_RE.findall(text)):
        hit = hits[n - 1]
        texts = [hit.chunk.text] + [h.chunk.text for h in siblings
                                    if h.chunk.section_key == hit.chunk.section_key]
        mine = [q for q in quotes if q in quoted.get(n, [])] or list(quoted.get(n, []))
        # the excerpt starts at the quoted unit; a unit from another chunk of the section is
        # shown as the excerpt itself
        source, quote = next(((t, q) for q in mine for t in texts if _contains(t, q)),
                             (mine[0], mine[0]) if mine else (hit.chunk.text, ""))
        excerpt = pick_excerpt(source, quote)
        citations.append(Citation(
            marker=f"S{n}", text=display_text(hit.chunk, excerpt, names), excerpt=excerpt,
            confidence=hit.blended, **chunk_location(hit.chunk, template, base_url, names)))
    return CitedAnswer(text, tuple(citations), unresolved, count_uncited(text, quotes))


def render_inline(answer: str, citations: Sequence[Citation]) -> str:
    """The answer with each marker replaced by its SPEC §3 display citation; a marker cited
    again shows the source's title only, so one excerpt is not repeated after every sentence."""
    by_marker = {c.marker: c for c in citations}
    shown: set[str] = set()

    def replace(m: re.Match) -> str:
        c = by_marker.get(f"S{m.group(1)}")
        if c is None:
            return ""
        if c.marker in shown:
            return f"[Source: {c.section_title or 'Selected text'}]"
        shown.add(c.marker)
        return c.text

    return MARKER_RE.sub(replace, answer)
