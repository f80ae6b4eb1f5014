"""Chunking, measured with MiniLM's own tokenizer: size, sentence boundaries, overlap, IDs."""

from __future__ import annotations

import re
import subprocess
import sys
import uuid

import numpy as np
import pytest

from rag.answer.citations import pick_excerpt
from rag.book.chunk import (
    CHUNK_NAMESPACE,
    ChunkerSettings,
    chunk_book,
    chunk_id,
    chunk_section,
    embed_text_for,
    pack_units,
    split_paged_units,
    split_units,
)
from rag.book.parse import parse_book
from rag.config import PROJECT_ROOT
from rag.types import Section
from tests.builders import GOLDEN, SAMPLE_BOOK, shared_path

MAX_INPUT = 256  # all-MiniLM-L6-v2's max_seq_length, [CLS] and [SEP] included


@pytest.fixture(scope="module")
def tokenizer(embedder):
    """An independent tokenizer from the model's own tokenizer.json, special tokens on."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(embedder.directory / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    bare = tok.encode("hello", add_special_tokens=False).ids
    assert len(tok.encode("hello").ids) == len(bare) + 2
    return tok


@pytest.fixture(scope="module")
def settings(embedder) -> ChunkerSettings:
    return ChunkerSettings(embedder.max_tokens)


def model_input_size(tokenizer, chunk) -> int:
    """Word pieces the model receives for this chunk: heading prefix and special tokens too."""
    return len(tokenizer.encode(embed_text_for(chunk.heading_path, chunk.text)).ids)


def make_section(text: str, title: str = "Gearboxes", path: tuple[str, ...] | None = None,
                 page: int | None = None, page_end: int | None = None) -> Section:
    return Section(module_id="mod", chapter_id="chap", section_id="sec", title=title,
                   chapter_title="Chapter", heading_path=path or ("Chapter", title), stable=True,
                   text=text, page=page, source_path="mod/chap.md", page_end=page_end)


def numbered_sentences(n: int) -> list[str]:
    return [f"Sentence {i} explains how the harmonic drive in joint {i} trades backlash for "
            f"torque density." for i in range(1, n + 1)]


def test_max_seq_length_is_what_the_chunker_assumes(embedder) -> None:
    assert embedder.max_tokens == MAX_INPUT == embedder.model.max_seq_length


def test_sample_book_chunks_fit_the_model(embedder, tokenizer, settings) -> None:
    book = parse_book(SAMPLE_BOOK)
    chunks = chunk_book(book.sections, book.book_id, settings, embedder.count_tokens_batch)
    sizes = [model_input_size(tokenizer, c) for c in chunks]
    assert max(sizes) <= MAX_INPUT
    assert sum(sizes) / len(sizes) > MAX_INPUT * 0.5  # and they are not needlessly small


def test_real_book_chunks_fit_the_model(embedder, tokenizer, settings) -> None:
    book = parse_book(shared_path("physical-ai-book"))
    chunks = chunk_book(book.sections, book.book_id, settings, embedder.count_tokens_batch)
    assert max(model_input_size(tokenizer, c) for c in chunks) <= MAX_INPUT


@pytest.mark.parametrize("text", [
    " ".join(["the actuator saturates under load"] * 150),  # one sentence of ~750 pieces
    "```python\n" + "\n".join(f"torque_{i} = gain * error_{i}  # joint {i}"
                              for i in range(120)) + "\n```",  # one long code block
    "-".join(["torque"] * 400),  # ~800 pieces and no space to cut at
    "Überschwingung und Regelabweichung. " * 80,  # many word pieces per word
    "机器人的平衡控制依赖于传感器。" * 60,  # every CJK character is its own piece
])
def test_oversized_units_are_cut_to_fit(embedder, tokenizer, settings, text: str) -> None:
    chunks = chunk_section(make_section(text), "b", settings, embedder.count_tokens_batch)
    assert len(chunks) > 1
    assert max(model_input_size(tokenizer, c) for c in chunks) <= MAX_INPUT
    kept = "".join("".join(c.text.split()) for c in chunks)
    assert len(kept) >= len("".join(text.split()))  # cut, never dropped


def test_a_huge_heading_path_still_fits(embedder, tokenizer, settings) -> None:
    long_title = " ".join(["Compliance"] * 120)
    path = ("Chapter", "Part " + long_title, "Sub " + long_title, long_title)
    section = make_section(" ".join(numbered_sentences(40)), title=long_title, path=path)
    chunks = chunk_section(section, "b", settings, embedder.count_tokens_batch)
    assert max(model_input_size(tokenizer, c) for c in chunks) <= MAX_INPUT
    assert all(c.heading_path and c.heading_path[-1].startswith("Compliance") for c in chunks)


def test_chunks_start_and_end_on_sentence_boundaries(embedder, settings) -> None:
    sentences = numbered_sentences(60)
    section = make_section(" ".join(sentences))
    chunks = chunk_section(section, "b", settings, embedder.count_tokens_batch)
    assert len(chunks) >= 3
    for chunk in chunks:
        assert chunk.text.startswith("Sentence ") and chunk.text.endswith("torque density.")
        # Whole sentences only, in order, each exactly as written.
        parts = [p.strip() + "." for p in chunk.text.split(".") if p.strip()]
        assert all(p in sentences for p in parts)
        first = sentences.index(parts[0])
        assert parts == sentences[first:first + len(parts)]


def test_sample_book_chunks_start_at_a_unit_start(embedder, settings) -> None:
    """Every chunk opens with a sentence (or list item, or code block), unless it continues a
    unit too long for one chunk."""
    book = parse_book(SAMPLE_BOOK)
    for section in book.sections:
        unit_texts = [text for text, _ in split_units(section.text)]
        oversized = [t for t in unit_texts if embedder.count_tokens(t) > settings.budget // 2]
        for chunk in chunk_section(section, "b", settings, embedder.count_tokens_batch):
            head = chunk.text[:40]
            assert any(t.startswith(head) or head.startswith(t) for t in unit_texts) or \
                any(head in t for t in oversized), \
                f"{section.key} chunk {chunk.ordinal} starts mid-sentence: {chunk.text[:60]!r}"


def test_consecutive_chunks_overlap_by_about_a_fifth(embedder, settings) -> None:
    sentences = numbered_sentences(80)
    chunks = chunk_section(make_section(" ".join(sentences)), "b", settings,
                           embedder.count_tokens_batch)
    assert len(chunks) >= 4
    for before, after in zip(chunks[:-1], chunks[1:], strict=True):
        shared = [s for s in sentences if s in before.text and s in after.text]
        assert shared and after.text.startswith(shared[0])  # the overlap is the next chunk's head
        shared_tokens = embedder.count_tokens(" ".join(shared))
        assert settings.budget * 0.10 <= shared_tokens <= settings.budget * settings.overlap


def test_every_sentence_is_kept_once_in_order(embedder, settings) -> None:
    sentences = numbered_sentences(75)
    chunks = chunk_section(make_section(" ".join(sentences)), "b", settings,
                           embedder.count_tokens_batch)
    seen: list[str] = []
    for chunk in chunks:
        seen.extend(s for s in sentences if s in chunk.text and s not in seen)
    assert seen == sentences


def test_chunks_never_cross_sections(embedder, settings) -> None:
    book = parse_book(SAMPLE_BOOK)
    by_key = {s.key: s for s in book.sections}
    chunks = chunk_book(book.sections, book.book_id, settings, embedder.count_tokens_batch)
    assert {c.section_key for c in chunks} <= set(by_key)
    for chunk in chunks:
        section = by_key[chunk.section_key]
        assert " ".join(chunk.text.split()) in " ".join(section.text.split())
        assert (chunk.section_title, chunk.heading_path, chunk.stable, chunk.page) == \
            (section.title, section.heading_path, section.stable, section.page)


# pack_units with hand-made units of 10 tokens, budget 100, overlap 20: a chunk closes once the
# next unit would pass the budget (with one token of slack), and carries its last 20 tokens on.

def units(n: int) -> list[tuple[str, int]]:
    return [(f"u{i}", 10) for i in range(1, n + 1)]


def names(groups: list[list[tuple[str, int]]]) -> list[str]:
    return [f"{g[0][0]}-{g[-1][0]}" for g in groups]


def test_pack_units_carries_the_overlap() -> None:
    assert names(pack_units(units(19), 100, 20)) == ["u1-u9", "u8-u16", "u15-u19"]


def test_tiny_tail_is_merged_into_the_previous_chunk() -> None:
    # Without merging: u1-u9, u8-u16, u15-u18, whose fresh part u17-u18 is 20 < 25 tokens. The
    # previous chunk gives up one unit of its overlap (u8 stays in the first chunk) to take it.
    assert names(pack_units(units(18), 100, 20)) == ["u1-u9", "u9-u18"]


def test_tiny_tail_after_the_first_chunk_keeps_its_overlap() -> None:
    # The first chunk has no overlap to give up, so the tail stays a chunk with its 20 tokens.
    assert names(pack_units(units(11), 100, 20)) == ["u1-u9", "u8-u11"]


def test_a_tail_that_fits_exactly_is_merged() -> None:
    assert names(pack_units(units(10), 100, 20)) == ["u1-u10"]


def test_no_chunk_is_a_tiny_fragment(embedder, settings) -> None:
    """Whatever the section length, the last chunk is merged or keeps its overlap: never a scrap."""
    sentences = numbered_sentences(80)
    merged = 0
    for n in range(14, 81):
        chunks = chunk_section(make_section(" ".join(sentences[:n])), "b", settings,
                               embedder.count_tokens_batch)
        sizes = [embedder.count_tokens(c.text) for c in chunks]
        assert min(sizes) >= settings.budget * 0.2, (n, sizes)
        assert sentences[n - 1] in chunks[-1].text
        if len(chunks) > 2:
            shared = [s for s in sentences if s in chunks[-2].text and s in chunks[-1].text]
            merged += len(shared) < len([s for s in sentences if s in chunks[-3].text
                                         and s in chunks[-2].text])
    assert merged  # some lengths leave a tail that the previous chunk absorbed


def test_chunk_ids_are_uuid5_of_book_section_and_ordinal(embedder, settings) -> None:
    section = make_section(" ".join(numbered_sentences(40)))
    chunks = chunk_section(section, "my-book", settings, embedder.count_tokens_batch)
    for chunk in chunks:
        expected = uuid.uuid5(CHUNK_NAMESPACE, f"my-book|mod/chap#sec|{chunk.ordinal}")
        assert chunk.chunk_id == str(expected)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    # Pinned value: changing the namespace or the name format would orphan every stored vector.
    assert chunk_id("book", "sensing/sensing-intro#timing-sync", 0) == str(
        uuid.uuid5(uuid.UUID("6f0a3c2e-5b7d-4e1f-9a8c-2d4b6e8f0a1c"),
                   "book|sensing/sensing-intro#timing-sync|0"))


def test_chunk_ids_are_stable_across_runs_and_processes(embedder, settings) -> None:
    book = parse_book(SAMPLE_BOOK)
    first = [c.chunk_id for c in chunk_book(book.sections, book.book_id, settings,
                                            embedder.count_tokens_batch)]
    again = [c.chunk_id for c in chunk_book(parse_book(SAMPLE_BOOK).sections, book.book_id,
                                            settings, embedder.count_tokens_batch)]
    assert first == again and len(set(first)) == len(first)
    script = ("from rag.book.parse import parse_book; from rag.book.chunk import *; "
              "from rag.providers.local_embedder import LocalEmbedder; e = LocalEmbedder(); "
              "b = parse_book('data/book'); "
              "print('\\n'.join(c.chunk_id for c in chunk_book(b.sections, b.book_id, "
              "ChunkerSettings(e.max_tokens), e.count_tokens_batch)))")
    out = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, check=True,
                         capture_output=True, text=True, env={"PYTHONHASHSEED": "123",
                                                               "HF_HUB_OFFLINE": "1"}).stdout
    assert out.split() == first


def test_page_and_code_flags_are_recorded(embedder, settings) -> None:
    ids = parse_book(GOLDEN / "books" / "ids")
    chunks = chunk_book(ids.sections, ids.book_id, settings, embedder.count_tokens_batch)
    pages = {c.section_key: c.page for c in chunks}
    assert pages["basics/first-steps#getting-started"] == 12
    assert pages["basics/intro#why"] is None
    mdx = parse_book(GOLDEN / "books" / "mdx")
    flags = {c.section_key: c.has_code for c in chunk_book(
        mdx.sections, mdx.book_id, settings, embedder.count_tokens_batch)}
    assert flags == {"guide/components#tabs": False, "guide/components#code": True,
                     "guide/plain#note": False}


def test_code_block_stays_whole_and_keeps_its_lines(embedder, settings) -> None:
    code = "```bash\nros2 run demo talker\nros2 run demo listener\n```"
    text = f"Start two nodes.\n\n{code}\n\nThen watch the topic."
    [chunk] = chunk_section(make_section(text), "b", settings, embedder.count_tokens_batch)
    assert code in chunk.text and chunk.has_code


def test_a_table_and_a_list_keep_their_lines_and_read_plainly_in_an_excerpt(embedder, settings
                                                                            ) -> None:
    rows = "| Tyre width | Pressure |\n| --- | --- |\n| 25 mm | 90 psi |\n| 28 mm | 80 psi |"
    text = (f"A 28 mm road tyre wants about 80 psi. Lower pressure gives more grip.\n\n{rows}\n\n"
            "Check it weekly:\n\n- before a long ride\n- after a puncture")
    [chunk] = chunk_section(make_section(text), "b", settings, embedder.count_tokens_batch)
    assert rows in chunk.text and "\n- before a long ride\n- after a puncture" in chunk.text
    excerpt = pick_excerpt(chunk.text, "A 28 mm road tyre")
    assert "|" not in excerpt and "---" not in excerpt and "- before" not in excerpt
    assert "grip. 25 mm: Pressure 90 psi; 28 mm: Pressure 80 psi. Check it weekly" in excerpt
    assert "before a long ride after a puncture" in excerpt
    # newlines or spaces between units: the same word pieces, so the same vector
    flat = embedder.embed_documents([" ".join(chunk.text.split())])[0]
    assert float(np.abs(embedder.embed_documents([chunk.text])[0] - flat).max()) < 1e-5


def test_empty_section_gives_no_chunks(embedder, settings) -> None:
    assert chunk_section(make_section("  \n "), "b", settings, embedder.count_tokens_batch) == []


def test_chunker_settings_describe_what_the_manifest_compares() -> None:
    a, b = ChunkerSettings(256), ChunkerSettings(512)
    assert a.budget == 254 and a.describe() != b.describe()
    assert set(a.describe()) == {"version", "max_tokens", "overlap"}


TURN = "\x1f"  # rag.book.pdf_sections.PAGE_BREAK, at the start of a page's first line


def test_paged_units_know_the_pages_they_are_on() -> None:
    text = (f"Encoders count ticks.\nA sentence that runs over\n{TURN}the page turn ends here. "
            f"Then another.\n\n- An item on page two\n{TURN}{TURN}```\nros2 run demo talker\n```"
            f"\n{TURN}Last words.")
    assert split_paged_units(text) == [
        ("Encoders count ticks.", False, 0, 0),
        ("A sentence that runs over the page turn ends here.", False, 0, 1),
        ("Then another.", False, 1, 1),
        ("- An item on page two", False, 1, 1),
        ("```\nros2 run demo talker\n```", True, 3, 3),  # after a page without text
        ("Last words.", False, 4, 4)]
    assert split_units(text) == [(t, code) for t, code, _, _ in split_paged_units(text)]


def test_chunks_of_a_pdf_section_carry_their_own_pages(embedder, settings) -> None:
    pages = [" ".join(f"On page {p} sentence {i} describes how joint {i} is driven by a belt."
                      for i in range(40)) for p in range(7, 10)]
    section = make_section(f"\n{TURN}".join(pages), page=7, page_end=9)
    chunks = chunk_section(section, "b", settings, embedder.count_tokens_batch)
    assert len(chunks) >= 6
    spans = [(c.page, c.page_end) for c in chunks]
    assert spans[0][0] == 7 and spans[-1][1] == 9
    assert all(7 <= a <= b <= 9 for a, b in spans)
    for chunk in chunks:  # each page number that a chunk's text names is within its range
        named = {int(n) for n in re.findall(r"On page (\d+)", chunk.text)}
        assert (min(named), max(named)) == (chunk.page, chunk.page_end)
        assert TURN not in chunk.text
    assert any(a == b for a, b in spans) and any(a < b for a, b in spans)


def test_a_markdown_section_passes_its_page_on_without_a_range(embedder, settings) -> None:
    [chunk] = chunk_section(make_section("Gears trade speed for torque.", page=12), "b",
                            settings, embedder.count_tokens_batch)
    assert (chunk.page, chunk.page_end) == (12, None)
