"""Sentence vectors kept with the index: every quotable unit of every section, embedded at ingest
so an extractive answer scores sentences with one matrix product instead of embedding them per
question (that was ~100 ms for the first question touching a section).

Incremental like the chunks: a unit whose text did not change keeps its vector. Stored as
float16 (cosines move by < 1e-3) beside the chunk table; the manifest records the version.
A unit that answers one of the book's own review questions, or sits under a heading that asks
or names a problem (rag.book.quiz), keeps that question; its vector is stored in a second matrix.
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

from rag.book.quiz import Quiz, heading_ask
from rag.book.sentences import split_section
from rag.index.lexical import tokenize
from rag.providers.base import Embedder
from rag.types import Section

SENTENCES_FILE, VECTORS_FILE, ASKS_FILE = "sentences.jsonl", "sentences.npy", "sentence_asks.npy"
SENTENCE_VERSION = "37"  # bump when split_section, or rag.book.quiz, changes a unit or its ask
Report = Callable[[str, float], None]


@dataclass
class SentenceTable:
    """Units of the book, row-aligned with their vectors, found by section key."""

    keys: list[str]  # section key (module/chapter#section) of each row
    texts: list[str]
    kinds: list[str]
    blocks: list[int]
    vectors: np.ndarray  # rows x dim, float32, unit length
    asks: list[str] = field(default_factory=list)  # the review question a unit answers, or ""
    ask_vectors: dict[str, np.ndarray] = field(default_factory=dict)  # of each such question
    by_section: dict[str, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.asks = self.asks or [""] * len(self.texts)
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
    rows = [(s.key, u.text, u.kind, u.block, quiz.asked_by(u.text) or heading)
            for s in sections for quiz, heading in [(Quiz(s.text), heading_ask(s.title))]
            for u in split_section(s.text, s.title)]
    known = _previous_vectors(directory, embedder.dim)
    asks = sorted({ask for *_, ask in rows if ask})
    todo = list(dict.fromkeys(text for text in [*(text for _, text, *_ in rows), *asks]
                              if _digest(text) not in known))
    report(f"Embedding {len(todo)} of {len(rows) + len(asks)} sentences and questions", 0.90)
    if todo:
        # Shortest first, so a batch pads little: ~3x faster than book order on short units.
        order = sorted(todo, key=len)
        vectors = embedder.embed_documents(order)
        known.update({_digest(t): v for t, v in zip(order, vectors, strict=True)})
    matrix, ask_matrix = (np.vstack([known[_digest(text)] for text in texts]) if texts else
                          np.zeros((0, embedder.dim), dtype=np.float32)
                          for texts in ([text for _, text, *_ in rows], asks))
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / (SENTENCES_FILE + ".tmp"), "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"key": k, "text": t, "kind": kind, "block": b} |
                                  ({"ask": ask} if ask else {}), ensure_ascii=False) + "\n"
                       for k, t, kind, b, ask in rows)
    for name, values in ((VECTORS_FILE, matrix), (ASKS_FILE, ask_matrix)):
        with open(directory / (name + ".tmp"), "wb") as out:
            np.save(out, values.astype(np.float16))
    for name in (SENTENCES_FILE, VECTORS_FILE, ASKS_FILE):
        (directory / (name + ".tmp")).replace(directory / name)
    return len(todo)


def _previous_vectors(directory: Path, dim: int) -> dict[str, np.ndarray]:
    table = load_sentences(directory, dim)
    if table is None:
        return {}
    known = {_digest(text): table.vectors[row] for row, text in enumerate(table.texts)}
    return known | {_digest(ask): vector for ask, vector in table.ask_vectors.items()}


def load_sentences(directory: Path, dim: int) -> SentenceTable | None:
    """The stored table, or None when there is none (an index built before sentence vectors,
    or one written without them), a row is not one, or it does not match its vectors."""
    path, vectors_path = directory / SENTENCES_FILE, directory / VECTORS_FILE
    asks_path = directory / ASKS_FILE
    if not (path.is_file() and vectors_path.is_file()):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        keys, texts, kinds = ([str(r[name]) for r in rows] for name in ("key", "text", "kind"))
        blocks = [int(r["block"]) for r in rows]
        row_asks = [r.get("ask") or "" for r in rows]
        vectors = np.load(vectors_path).astype(np.float32)
        asks = sorted({ask for ask in row_asks if ask})  # TypeError unless every ask is text
        ask_vectors = np.load(asks_path).astype(np.float32) if asks_path.is_file() else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if vectors.shape != (len(rows), dim) or not all(isinstance(a, str) for a in row_asks) or (
            asks and (ask_vectors is None or ask_vectors.shape != (len(asks), dim))):
        return None
    return SentenceTable(keys, texts, kinds, blocks, vectors, row_asks,
                         dict(zip(asks, ask_vectors if asks else [], strict=True)))
