"""Sentence vectors kept with the index: every quotable unit of every section, embedded at ingest
so an extractive answer scores sentences with one matrix product instead of embedding them per
question (that was ~100 ms for the first question touching a section).

Incremental like the chunks: a unit whose text did not change keeps its vector. Stored as
float16 (cosines move by < 1e-3) beside the chunk table, each vector with its text's digest
(rag.index.vector_file); the manifest records the version. Streamed: units are embedded a batch
at a time, shortest first (a batch pads little: ~3x faster than book order on short units), each
batch appended to a log, and the table is written from the log and the previous table at the end,
so memory holds one batch of vectors and a killed ingest resumes where it stopped.
A unit that answers one of the book's own review questions, or sits under a heading that asks
or names a problem (rag.book.quiz), keeps that question; its vector is stored in a second matrix.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from rag.book.quiz import Quiz, heading_ask
from rag.book.sentences import split_section
from rag.index.durable import replace_file
from rag.index.lexical import tokenize
from rag.index.vector_file import KnownVectors, VectorLog, read_table, text_digest, write_table
from rag.providers.base import Embedder
from rag.types import Section

SENTENCES_FILE, VECTORS_FILE, ASKS_FILE = ("sentences.jsonl", "sentence_vectors.npy",
                                           "ask_vectors.npy")
LOG_FILE = "sentence_vectors.log"  # batches embedded by an ingest that has not published yet
LEGACY_FILES = ("sentences.npy", "sentence_asks.npy")  # before vectors carried their digests
SENTENCE_VERSION = "38"  # bump when split_section, or rag.book.quiz, changes a unit or its ask
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


Row = tuple[str, str, str, int, str]  # section key, text, kind, block, the question it answers


@dataclass(frozen=True)
class SentencePlan:
    """The table an ingest will publish, and the texts it must embed first."""

    rows: list[Row]
    asks: list[str]  # distinct questions, sorted
    todo: list[str]  # texts with no stored vector, distinct, shortest first


def plan_sentences(directory: Path, sections: list[Section], dim: int) -> SentencePlan:
    rows = [(s.key, u.text, u.kind, u.block, quiz.asked_by(u.text) or heading)
            for s in sections for quiz, heading in [(Quiz(s.text), heading_ask(s.title))]
            for u in split_section(s.text, s.title)]
    asks = sorted({row[4] for row in rows if row[4]})
    known = known_vectors(directory, dim)
    todo = [text for text in dict.fromkeys([*(row[1] for row in rows), *asks])
            if text_digest(text) not in known]
    return SentencePlan(rows, asks, sorted(todo, key=len))


def known_vectors(directory: Path, dim: int) -> KnownVectors:
    """Every vector this index holds a record of: the published tables and the log."""
    tables = [read_table(directory / name, dim) for name in (VECTORS_FILE, ASKS_FILE)]
    return KnownVectors(dim, [t for t in tables if t is not None]
                        + [VectorLog(directory / LOG_FILE, dim).records()])


def embed_sentences(directory: Path, batches: Iterable[list[str]], embedder: Embedder
                    ) -> Iterator[list[str]]:
    """Embed each batch of texts and append it to the log; yields each batch once it is on
    disk (for progress)."""
    log = VectorLog(directory / LOG_FILE, embedder.dim)
    for batch in batches:
        log.append(batch, embedder.embed_documents(batch))
        yield batch


def publish_sentences(directory: Path, plan: SentencePlan, dim: int) -> None:
    """Write the table (rows, their vectors, the questions' vectors) from the records on disk;
    each file is renamed into place once complete, then the log is no longer needed."""
    known = known_vectors(directory, dim)
    tmp = directory / (SENTENCES_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"key": k, "text": t, "kind": kind, "block": b} |
                                  ({"ask": ask} if ask else {}), ensure_ascii=False) + "\n"
                       for k, t, kind, b, ask in plan.rows)
    write_table(directory / VECTORS_FILE, [text_digest(row[1]) for row in plan.rows], known)
    write_table(directory / ASKS_FILE, [text_digest(ask) for ask in plan.asks], known)
    replace_file(tmp, directory / SENTENCES_FILE)
    del known  # unmaps the log before it goes
    VectorLog(directory / LOG_FILE, dim).remove()
    for name in LEGACY_FILES:
        (directory / name).unlink(missing_ok=True)


def sync_sentences(directory: Path, sections: list[Section], embedder: Embedder,
                   report: Report | None = None) -> int:
    """Write the sentence table for these sections; returns how many texts were embedded."""
    report = report or (lambda message, fraction: None)
    directory.mkdir(parents=True, exist_ok=True)
    plan = plan_sentences(directory, sections, embedder.dim)
    report(f"Embedding {len(plan.todo)} of {len(plan.rows) + len(plan.asks)} sentences and "
           "questions", 0.90)
    size = embedder.batch_size
    for _ in embed_sentences(directory, (plan.todo[i:i + size]
                                         for i in range(0, len(plan.todo), size)), embedder):
        pass
    publish_sentences(directory, plan, embedder.dim)
    return len(plan.todo)


def load_sentences(directory: Path, dim: int) -> SentenceTable | None:
    """The stored table, or None when there is none (an index built before sentence vectors,
    or one written without them), a row is not one, or a vector is not its row's text's."""
    path = directory / SENTENCES_FILE
    vectors, ask_table = read_table(directory / VECTORS_FILE, dim), \
        read_table(directory / ASKS_FILE, dim)
    if not path.is_file() or vectors is None or ask_table is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            rows = [json.loads(line) for line in f]
        keys, texts, kinds = ([str(r[name]) for r in rows] for name in ("key", "text", "kind"))
        blocks = [int(r["block"]) for r in rows]
        row_asks = [r.get("ask") or "" for r in rows]
        asks = sorted({ask for ask in row_asks if ask})  # TypeError unless every ask is text
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not all(isinstance(a, str) for a in row_asks) or \
            [text_digest(t).encode() for t in texts] != vectors["digest"].tolist() or \
            [text_digest(a).encode() for a in asks] != ask_table["digest"].tolist():
        return None
    return SentenceTable(keys, texts, kinds, blocks, vectors["vector"].astype(np.float32),
                         row_asks, dict(zip(asks, ask_table["vector"].astype(np.float32),
                                            strict=True)))
