"""Sections -> chunks: sentence boundaries, sized in the embedder's tokens, 20 % overlap."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from rag.book.pdf_sections import PAGE_BREAK
from rag.book.segment import split_sentences
from rag.types import Chunk, Section

CHUNK_NAMESPACE = uuid.UUID("6f0a3c2e-5b7d-4e1f-9a8c-2d4b6e8f0a1c")
CHUNKER_VERSION = "4"  # 4: one sentence splitter (rag.book.segment), fences by marker
SPECIAL_TOKENS = 2  # [CLS]/[SEP] or their equivalent count against the model's input
MIN_TAIL_FRACTION = 0.25  # a last piece smaller than this share of the budget is merged back
FENCE_RE = re.compile(r"^\s*(```|~~~)")
LINE_UNIT = ("- ", "* ", "|", "1. ")  # a line that is a unit of its own: a list item, a table row

CountTokens = Callable[[list[str]], list[int]]
Unit = tuple[str, bool, int, int]  # text, is code, first and last page (offsets in the section)


@dataclass(frozen=True)
class ChunkerSettings:
    max_tokens: int  # the embedder's maximum input, special tokens included
    overlap: float = 0.20

    @property
    def budget(self) -> int:
        return self.max_tokens - SPECIAL_TOKENS

    def describe(self) -> dict:
        return {"version": CHUNKER_VERSION, "max_tokens": self.max_tokens, "overlap": self.overlap}


def split_units(text: str) -> list[tuple[str, bool]]:
    """Sentences of prose and whole code blocks, in order, each flagged as code or not."""
    return [(unit, code) for unit, code, _, _ in split_paged_units(text)]


def split_paged_units(text: str) -> list[Unit]:
    """split_units with the pages each unit is on, counted in the PAGE_BREAK marks a PDF section's
    lines start with: a sentence running over a page turn is on both pages."""
    units: list[Unit] = []
    paragraph: list[tuple[str, int]] = []
    code: list[str] | None = None
    code_page = page = 0
    marker = ""  # the fence that opened the code block: only the same one closes it

    def flush_paragraph() -> None:
        words = [(w, p) for line, p in paragraph for w in line.split()]
        position = 0
        for sentence in split_sentences(" ".join(w for w, _ in words)):
            n = len(sentence.split())
            if sentence.strip():
                first = words[min(position, len(words) - 1)][1]
                units.append((sentence.strip(), False, first,
                              words[min(position + n, len(words)) - 1][1]))
            position += n
        paragraph.clear()

    for raw in text.splitlines():
        line = raw.lstrip(PAGE_BREAK)
        page += len(raw) - len(line)
        if FENCE_RE.match(line) and (code is None or _closes(line, marker)):
            if code is None:
                flush_paragraph()
                code, code_page = [line], page
                stripped = line.strip()
                marker = stripped[:len(stripped) - len(stripped.lstrip(stripped[0]))]
            else:
                code.append(line)
                units.append(("\n".join(code), True, code_page, page))
                code = None
        elif code is not None:
            code.append(line)
        elif not line.strip() or line.lstrip().startswith(LINE_UNIT):
            flush_paragraph()
            if line.strip():
                paragraph.append((line.strip(), page))
                flush_paragraph()
        else:
            paragraph.append((line.strip(), page))
    if code is not None:
        units.append(("\n".join(code), True, code_page, page))
    flush_paragraph()
    return units


def _closes(line: str, marker: str) -> bool:
    """A fence line closes the block `marker` opened: the same character, at least as many."""
    stripped = line.strip()
    return stripped.startswith(marker) and not stripped.lstrip(marker[0]).strip()


def split_oversized(text: str, limit: int, count: CountTokens) -> list[str]:
    """Cut a unit longer than the budget at word boundaries, halving until pieces fit."""
    words = text.split(" ") if " " in text else list(text)
    if len(words) <= 1:
        return [text[: max(1, len(text) // 2)], text[max(1, len(text) // 2):]]
    middle = len(words) // 2
    sep = " " if " " in text else ""
    pieces = []
    for part in (sep.join(words[:middle]), sep.join(words[middle:])):
        pieces.extend([part] if count([part])[0] <= limit else split_oversized(part, limit, count))
    return pieces


def _tokens(units: list[tuple]) -> int:
    return sum(unit[1] for unit in units)


def pack_units(units: list[tuple], budget: int, overlap_tokens: int) -> list[list[tuple]]:
    """Greedy packing of (text, tokens, ...) units; each chunk after the first opens with the
    previous one's last units."""
    chunks: list[list[tuple]] = []
    carried: list[int] = []  # per chunk: how many leading units repeat the chunk before it
    current: list[tuple] = []
    fresh = 0  # units in `current` that are not overlap
    for unit in units:
        size = _tokens(current) + unit[1] + (1 if current else 0)
        if current and size > budget and fresh:
            chunks.append(current)
            carried.append(len(current) - fresh)
            carry: list[tuple] = []
            for prev in reversed(current):
                if _tokens(carry) + prev[1] > overlap_tokens:
                    break
                carry.insert(0, prev)
            while carry and _tokens(carry) + unit[1] > budget:
                carry.pop(0)
            current, fresh = carry, 0
        current.append(unit)
        fresh += 1
    if current and fresh:
        tail = current[len(current) - fresh:]
        merged = None
        if chunks and _tokens(tail) < budget * MIN_TAIL_FRACTION:
            merged = merge_tail(chunks[-1], carried[-1], tail, budget)
        if merged is not None:
            chunks[-1] = merged
        else:
            chunks.append(current)
    return chunks


def merge_tail(previous: list[tuple], carried: int, tail: list[tuple], budget: int
               ) -> list[tuple] | None:
    """The previous chunk plus a tiny tail, giving up as much of its leading overlap as needed.

    The previous chunk was closed because the tail's first unit did not fit, so the tail only fits
    once some overlap goes; that text stays in the chunk before it. None when nothing fits.
    """
    tail_size = _tokens(tail)
    for drop in range(carried + 1):  # units are joined by whitespace, which costs no tokens
        kept = previous[drop:]
        if _tokens(kept) + tail_size <= budget:
            return kept + tail
    return None


def fit_heading_path(path: tuple[str, ...], limit: int, count: CountTokens) -> tuple[str, ...]:
    """The heading path, shortened from the top (then the last title cut) to fit `limit` tokens."""
    while len(path) > 1 and count([" > ".join(path)])[0] > limit:
        path = path[1:]
    if path and count([path[-1]])[0] > limit:
        path = (split_oversized(path[-1], limit, count)[0],)
    return path


def chunk_section(section: Section, book_id: str, settings: ChunkerSettings,
                  count: CountTokens) -> list[Chunk]:
    if not section.text.strip():
        return []
    # The heading is embedded with each chunk; it may take at most half of the model's input.
    path = fit_heading_path(section.heading_path, settings.budget // 2, count)
    budget = settings.budget - count([" > ".join(path)])[0] - 1
    raw_units = split_paged_units(section.text)
    sized: list[tuple[str, int, int, int]] = []
    for (text, _, first, last), n in zip(raw_units, count([u[0] for u in raw_units]),
                                         strict=True):
        pieces = [text] if n <= budget else split_oversized(text, budget, count)
        sized.extend((piece, size, first, last) for piece, size in
                     zip(pieces, count(pieces) if len(pieces) > 1 else [n], strict=True))
    packed = pack_units(sized, budget, int(settings.budget * settings.overlap))
    chunks = []
    for ordinal, group in enumerate(packed):
        # a table's rows and a list's items on their own lines (joined by spaces, "| --- |"
        # showed in excerpts); whitespace either way, so the vectors and BM25 terms are the same
        lined = any("\n" in u[0] or u[0].startswith(LINE_UNIT) for u in group)
        text = ("\n" if lined else " ").join(u[0] for u in group)
        page, page_end = chunk_pages(section, group)
        chunks.append(Chunk(
            chunk_id=chunk_id(book_id, section.key, ordinal), text=text,
            module_id=section.module_id, chapter_id=section.chapter_id,
            section_id=section.section_id, section_title=section.title,
            chapter_title=section.chapter_title, heading_path=path,
            stable=section.stable, page=page, page_end=page_end, ordinal=ordinal,
            token_count=count([embed_text_for(path, text)])[0],
            has_code=any(FENCE_RE.match(u[0]) for u in group), source_path=section.source_path,
            authority=section.authority, last_updated=section.last_updated))
    return chunks


def chunk_pages(section: Section, group: list[tuple]) -> tuple[int | None, int | None]:
    """The first and last page of the chunk's own units; a section without a page range (a
    Markdown chapter's frontmatter page) passes its page on."""
    if section.page is None or section.page_end is None:
        return section.page, None
    last = min(section.page + max(u[3] for u in group), section.page_end)
    return min(section.page + min(u[2] for u in group), last), last


def chunk_id(book_id: str, section_key: str, ordinal: int) -> str:
    return str(uuid.uuid5(CHUNK_NAMESPACE, f"{book_id}|{section_key}|{ordinal}"))


def embed_text_for(heading_path: tuple[str, ...], text: str) -> str:
    """What is embedded and BM25-indexed: the heading path gives the chunk its topic."""
    return f"{' > '.join(heading_path)}\n{text}" if heading_path else text


def chunk_text_hash(chunk: Chunk) -> str:
    return hashlib.sha256(embed_text_for(chunk.heading_path, chunk.text).encode()).hexdigest()[:16]


def chunk_book(sections: list[Section], book_id: str, settings: ChunkerSettings,
               count: CountTokens) -> list[Chunk]:
    return [c for s in sections for c in chunk_section(s, book_id, settings, count)]
