"""Sentence vectors kept with the index: every quotable unit of every section, embedded at ingest
so an extractive answer scores sentences with one matrix product instead of embedding them per
question (that was ~100 ms for the first question touching a section).

Incremental like the chunks: a unit whose text did not change keeps its vector. Stored as
float16 (cosines move by < 1e-3) beside the chunk table; the manifest records the version.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from rag.book.sentences import split_section
from rag.index.lexical import tokenize
from rag.providers.base import Embedder
from rag.types import Section

SENTENCES_FILE, VECTORS_FILE = "sentences.jsonl", "sentences.npy"
SENTENCE_VERSION = "20"  # bump when split_section changes what a unit is
Report = Callable[[str, float], None]


@dataclass
class SentenceTable:
    """Units of the book, row-aligned with their vectors, found by section key."""

    keys: list[str]  # section key (module/chapter#section) of each row
    texts: list[str]
    kinds: list[str]
    blocks: list[int]
    vectors: np.ndarray  # rows x dim, float32, unit length
    by_section: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for row, key in enumerate(self.keys):
            self.by_section.setdefault(key, []).append(row)

    def rows_for(self, section_key: str) -> list[int]:
        return self.by_section.get(section_key, [])

    @cached_property
    def token_sets(self) -> list[frozenset[str]]:
        """Each unit's distinct stems, tokenized once per loaded index."""
        return [frozenset(tokenize(text)) for text in self.texts]

    @cached_property
    def document_frequency(self) -> Counter:
        """In how many units each stem occurs (for IDF); counted once per loaded index."""
        return Counter(stem for stems in self.token_sets for stem in stems)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def sync_sentences(directory: Path, sections: list[Section], embedder: Embedder,
                   report: Report | None = None) -> int:
    """Write the sentence table for these sections; returns how many units were embedded."""
    report = report or (lambda message, fraction: None)
    rows = [(s.key, u.text, u.kind, u.block) for s in sections
            for u in split_section(s.text, s.title)]
    known = _previous_vectors(directory, embedder.dim)
    todo = list(dict.fromkeys(text for _, text, _, _ in rows if _digest(text) not in known))
    report(f"Embedding {len(todo)} of {len(rows)} sentences", 0.90)
    if todo:
        # Shortest first, so a batch pads little: ~3x faster than book order on short units.
        order = sorted(todo, key=len)
        vectors = embedder.embed_documents(order)
        known.update({_digest(t): v for t, v in zip(order, vectors, strict=True)})
    matrix = np.vstack([known[_digest(text)] for _, text, _, _ in rows]) if rows else \
        np.zeros((0, embedder.dim), dtype=np.float32)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / (SENTENCES_FILE + ".tmp"), "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"key": k, "text": t, "kind": kind, "block": b},
                                  ensure_ascii=False) + "\n" for k, t, kind, b in rows)
    with open(directory / (VECTORS_FILE + ".tmp"), "wb") as out:
        np.save(out, matrix.astype(np.float16))
    (directory / (SENTENCES_FILE + ".tmp")).replace(directory / SENTENCES_FILE)
    (directory / (VECTORS_FILE + ".tmp")).replace(directory / VECTORS_FILE)
    return len(todo)


def _previous_vectors(directory: Path, dim: int) -> dict[str, np.ndarray]:
    table = load_sentences(directory, dim)
    if table is None:
        return {}
    return {_digest(text): table.vectors[row] for row, text in enumerate(table.texts)}


def load_sentences(directory: Path, dim: int) -> SentenceTable | None:
    """The stored table, or None when there is none (an index built before sentence vectors,
    or one written without them) or it does not match its vectors."""
    path, vectors_path = directory / SENTENCES_FILE, directory / VECTORS_FILE
    if not (path.is_file() and vectors_path.is_file()):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        vectors = np.load(vectors_path).astype(np.float32)
    except (OSError, ValueError):
        return None
    if vectors.shape != (len(rows), dim):
        return None
    return SentenceTable([r["key"] for r in rows], [r["text"] for r in rows],
                         [r["kind"] for r in rows], [int(r["block"]) for r in rows], vectors)
