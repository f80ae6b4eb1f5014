"""The book's index: Qdrant vectors + BM25 (files, and with the qdrant lexical backend sparse
vectors in the same collection) + chunk table, kept in step by a manifest."""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag.book.parse import Book, parse_book
from rag.errors import BookIndexError
from rag.index.ingest import SyncResult, sync_sections
from rag.index.lexical import BM25S, LexicalIndex
from rag.index.manifest import (
    CHUNKS_FILE,
    MANIFEST,
    collection_dir,
    collection_name,
    content_status,
    incomplete_index_error,
    index_problem,
    read_manifest,
)
from rag.index.progress import READ, IngestProgress, Progress
from rag.index.sentences import SentenceTable, load_sentences
from rag.index.sparse import SparseLexical, open_lexical
from rag.index.vectors import VectorStore
from rag.providers.base import Embedder
from rag.types import Chunk

__all__ = [  # what other modules and the tests import from here
    "CHUNKS_FILE", "MANIFEST", "BookIndex", "IngestSummary", "Progress", "SyncResult",
    "collection_dir", "collection_name", "content_status", "dense_scores_for",
    "incomplete_index_error", "index_problem", "index_status", "open_index", "read_manifest",
    "sync_index", "sync_sections",
]


@dataclass
class IngestSummary:
    book: str
    files: int
    sections: int
    chunks: int
    embedded: int
    reused: int
    removed: int
    unstable_ids: int
    unstable_files: list[str]
    skipped_files: list[dict[str, str]]
    duplicates: list[str]
    seconds: float
    rebuilt: bool = False
    notes: list[str] = dataclasses.field(default_factory=list)
    renderer: str = ""  # whose heading ids the derived ones follow
    missed: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)  # file -> kind

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class BookIndex:
    """Everything retrieval needs, loaded once: chunks, BM25, and a handle on the vectors."""

    collection: str
    chunks: list[Chunk]
    lexical: LexicalIndex | SparseLexical
    store: VectorStore
    embedder: Embedder
    manifest: dict
    sentences: SentenceTable | None = None  # None: built before sentence vectors were kept
    positions: dict[str, int] = field(default_factory=dict)
    # values derived from the chunks, computed on first use and shared by shallow copies (the
    # pipeline copies the index per request), so each is computed once per loaded index
    derived: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.positions = {c.chunk_id: i for i, c in enumerate(self.chunks)}


def index_status(book: Book, index_dir: Path, embedder: Embedder, lexical: str = BM25S
                 ) -> dict:
    """Whether the index matches the book, chunker and embedder; cheap, nothing is embedded."""
    return content_status(book.book_id, book.content_hash, index_dir, embedder, lexical=lexical)


def _chunk_from(data: dict) -> Chunk:
    return Chunk(**{**data, "heading_path": tuple(data["heading_path"])})


def sync_index(book_dir: Path, index_dir: Path, embedder: Embedder, store: VectorStore,
               rebuild: bool = False, progress: Progress | None = None) -> IngestSummary:
    """Bring the index in line with the book, embedding only new or changed chunks."""
    started = time.perf_counter()
    tracker = IngestProgress(progress)
    tracker.start(READ)
    book = parse_book(book_dir)
    result = sync_sections(book.sections, book.book_id, book.content_hash, index_dir, embedder,
                           store, {"book_root": str(book.root), "chapters": book.chapters,
                                   "report": dataclasses.asdict(book.report)},
                           rebuild, tracker)
    r = book.report
    return IngestSummary(
        book=str(book.root), files=r.files, sections=r.sections, chunks=result.chunks,
        embedded=result.embedded, reused=result.chunks - result.embedded,
        removed=result.removed, unstable_ids=r.unstable_ids, unstable_files=r.unstable_files,
        skipped_files=r.skipped_files, duplicates=r.duplicates,
        seconds=round(time.perf_counter() - started, 3), rebuilt=result.rebuilt,
        notes=list(r.notes), renderer=r.renderer, missed=dict(r.missed))


def open_index(book_id: str, index_dir: Path, embedder: Embedder, store: VectorStore
               ) -> BookIndex:
    name = collection_name(book_id, embedder)
    directory = collection_dir(index_dir, name)
    manifest = read_manifest(directory)
    if manifest is None:
        raise BookIndexError(f"No index for this book in {index_dir}; build it with "
                          "`python -m rag ingest` (or `make run`).")
    problem = index_problem(directory, manifest)
    if problem:
        raise incomplete_index_error(directory, problem)
    try:
        with open(directory / CHUNKS_FILE, encoding="utf-8") as f:
            chunks = [_chunk_from(json.loads(line)) for line in f]
    except (OSError, ValueError, TypeError, KeyError) as e:  # JSON errors are ValueErrors
        raise incomplete_index_error(directory, f"{CHUNKS_FILE} is unreadable: {e}") from e
    lexical = open_lexical(store, name, [c.chunk_id for c in chunks], directory / "bm25",
                           manifest)
    store.preload(name)
    return BookIndex(name, chunks, lexical, store, embedder, manifest,
                     load_sentences(directory, embedder.dim))


def dense_scores_for(index: BookIndex, query_vector: np.ndarray, ids: list[str]
                     ) -> dict[str, float]:
    """Cosine for chunks that the dense search did not return, from their stored vectors."""
    vectors = index.store.fetch_vectors(index.collection, ids)
    return {cid: float(np.dot(vec, query_vector)) for cid, vec in vectors.items()}
