"""The book's index: Qdrant vectors + BM25 (files, and with the qdrant lexical backend sparse
vectors in the same collection) + chunk table, kept in step by a manifest."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag.book.chunk import ChunkerSettings, chunk_book, chunk_text_hash, embed_text_for
from rag.book.parse import Book, parse_book
from rag.errors import BookIndexError, InputError
from rag.index.lexical import BM25S, QDRANT, LexicalIndex, lexical_files_present, lexical_signature
from rag.index.sentences import SENTENCE_VERSION, SentenceTable, load_sentences, sync_sentences
from rag.index.sparse import SparseLexical, open_lexical, sparse_current, sync_sparse
from rag.index.vectors import VectorStore
from rag.providers.base import Embedder
from rag.types import Chunk, Section

MANIFEST, CHUNKS_FILE = "manifest.json", "chunks.jsonl"
Progress = Callable[[str, float], None]


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


def collection_name(book_id: str, embedder: Embedder) -> str:
    return f"{book_id}__{embedder.name}"


def collection_dir(index_dir: Path, collection: str) -> Path:
    return Path(index_dir) / collection


def read_manifest(directory: Path) -> dict | None:
    """The manifest, or None when it is missing or not one (torn, `[]`, fields of wrong types)."""
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    shapes = {"embedder": dict, "hashes": dict, "chunks": int}
    if not isinstance(manifest, dict) or any(
            not isinstance(manifest.get(key, kind()), kind) for key, kind in shapes.items()):
        return None
    return manifest


def index_problem(directory: Path, manifest: dict) -> str | None:
    """What makes the files beside a manifest unusable, or None; reads no JSON, so it is cheap
    enough for every freshness check (one pass over chunks.jsonl counting newlines)."""
    path = directory / CHUNKS_FILE
    try:
        lines, last = 0, b"\n"
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                lines, last = lines + block.count(b"\n"), block[-1:]
    except OSError:
        return f"{CHUNKS_FILE} is missing or unreadable"
    if last != b"\n":
        return f"{CHUNKS_FILE} ends mid-line"
    if lines != manifest.get("chunks", 0):
        return f"{CHUNKS_FILE} has {lines} chunks, the manifest says {manifest.get('chunks', 0)}"
    if not lexical_files_present(directory / "bm25"):
        return "BM25 files are missing"
    return None


def incomplete_index_error(directory: Path, problem: str) -> BookIndexError:
    return BookIndexError(f"The index in {directory} is incomplete ({problem}); rebuild it with "
                          "`python -m rag ingest --rebuild`.")


def index_status(book: Book, index_dir: Path, embedder: Embedder, lexical: str = BM25S
                 ) -> dict:
    """Whether the index matches the book, chunker and embedder; cheap, nothing is embedded."""
    return content_status(book.book_id, book.content_hash, index_dir, embedder, lexical=lexical)


def content_status(book_id: str, content_hash: str, index_dir: Path, embedder: Embedder,
                   sentences: bool = True, lexical: str = BM25S) -> dict:
    """index_status for any content indexed under `book_id` (a book, a BEIR corpus)."""
    manifest = read_manifest(collection_dir(index_dir, collection_name(book_id, embedder)))
    if manifest is None:
        return {"exists": False, "fresh": False, "reason": "no index has been built yet"}
    problem = index_problem(collection_dir(index_dir, collection_name(book_id, embedder)),
                            manifest)
    if problem:
        return {"exists": True, "fresh": False, "reason": f"the index is incomplete ({problem})",
                "built_at": manifest.get("built_at", ""), "chunks": manifest.get("chunks", 0)}
    expected = ChunkerSettings(embedder.max_tokens).describe()
    reasons = [
        (manifest.get("embedder", {}).get("model_id") != embedder.model_id, "embedder changed"),
        (manifest.get("chunker") != expected, "chunker settings changed"),
        (manifest.get("lexical") != lexical_signature(), "BM25 tokenizer changed"),
        (manifest.get("book_hash") != content_hash, "the book changed since it was indexed"),
        (sentences and manifest.get("sentences") != SENTENCE_VERSION,
         "sentence vectors are missing or out of date"),
        (lexical == QDRANT and not sparse_current(manifest),
         "BM25 sparse vectors are missing or out of date"),
    ]
    stale = [text for bad, text in reasons if bad]
    return {"exists": True, "fresh": not stale, "reason": "; ".join(stale) or "up to date",
            "built_at": manifest.get("built_at", ""), "chunks": manifest.get("chunks", 0)}


def _payload(chunk: Chunk) -> dict:
    data = dataclasses.asdict(chunk)
    data["heading_path"] = list(chunk.heading_path)
    return data


def _chunk_from(data: dict) -> Chunk:
    return Chunk(**{**data, "heading_path": tuple(data["heading_path"])})


@dataclass(frozen=True)
class SyncResult:
    chunks: int
    embedded: int
    removed: int
    rebuilt: bool


def sync_index(book_dir: Path, index_dir: Path, embedder: Embedder, store: VectorStore,
               rebuild: bool = False, progress: Progress | None = None) -> IngestSummary:
    """Bring the index in line with the book, embedding only new or changed chunks."""
    started = time.perf_counter()
    (progress or (lambda message, fraction: None))("Reading the book", 0.0)
    book = parse_book(book_dir)
    result = sync_sections(book.sections, book.book_id, book.content_hash, index_dir, embedder,
                           store, {"book_root": str(book.root), "chapters": book.chapters,
                                   "report": dataclasses.asdict(book.report)},
                           rebuild, progress)
    r = book.report
    return IngestSummary(
        book=str(book.root), files=r.files, sections=r.sections, chunks=result.chunks,
        embedded=result.embedded, reused=result.chunks - result.embedded,
        removed=result.removed, unstable_ids=r.unstable_ids, unstable_files=r.unstable_files,
        skipped_files=r.skipped_files, duplicates=r.duplicates,
        seconds=round(time.perf_counter() - started, 3), rebuilt=result.rebuilt,
        notes=list(r.notes))


def sync_sections(sections: list[Section], book_id: str, content_hash: str, index_dir: Path,
                  embedder: Embedder, store: VectorStore, extra: dict | None = None,
                  rebuild: bool = False, progress: Progress | None = None,
                  sentences: bool = True) -> SyncResult:
    """Index any sections (a book's, a BEIR corpus's) under `book_id`: chunk them, embed the
    chunks whose text changed, rebuild BM25, embed changed sentences (for extractive answers;
    a retrieval benchmark needs none), and write the manifest last."""
    report = progress or (lambda message, fraction: None)
    settings = ChunkerSettings(embedder.max_tokens)
    chunks = chunk_book(sections, book_id, settings, embedder.count_tokens_batch)
    if not chunks:
        raise _no_text_error(book_id, extra or {})
    name = collection_name(book_id, embedder)
    directory = collection_dir(index_dir, name)
    manifest = read_manifest(directory) or {}
    previous: dict[str, str] = manifest.get("hashes", {})
    compatible = (manifest.get("chunker") == settings.describe()
                  and manifest.get("embedder", {}).get("model_id") == embedder.model_id
                  and store.count(name) == len(previous)
                  and (store.lexical != QDRANT or store.has_sparse(name)))
    if rebuild or not compatible:
        store.drop(name)
        shutil.rmtree(directory, ignore_errors=True)
        previous = {}
    if not store.has_collection(name):
        store.create(name, embedder.dim, sparse=store.lexical == QDRANT)
    hashes = {c.chunk_id: chunk_text_hash(c) for c in chunks}
    todo = [c for c in chunks if previous.get(c.chunk_id) != hashes[c.chunk_id]]
    removed = [cid for cid in previous if cid not in hashes]
    report(f"Embedding {len(todo)} of {len(chunks)} chunks", 0.05)
    vectors = embedder.embed_documents(
        [embed_text_for(c.heading_path, c.text) for c in todo],
        progress=lambda done, total: report(f"Embedded {done}/{total} chunks",
                                            0.05 + 0.8 * done / max(total, 1)))
    store.upsert(name, [c.chunk_id for c in todo], vectors, [_payload(c) for c in todo])
    store.delete(name, removed)
    if sentences:
        sync_sentences(directory, sections, embedder, report)
    report("Building the BM25 index", 0.97)
    texts = [embed_text_for(c.heading_path, c.text) for c in chunks]
    sparse = sync_sparse(store, name, list(hashes), texts) if store.lexical == QDRANT else None
    _write_files(directory, chunks, texts, {
        "book_id": book_id, "book_hash": content_hash, "chunker": settings.describe(),
        "embedder": {"name": embedder.name, "model_id": embedder.model_id, "dim": embedder.dim},
        "hashes": hashes, **({"sentences": SENTENCE_VERSION} if sentences else {}),
        **({"sparse": sparse} if sparse else {}), **(extra or {})})
    report("Done", 1.0)
    return SyncResult(len(chunks), len(todo), len(removed), rebuild or not compatible)


def _no_text_error(book_id: str, extra: dict) -> InputError:
    """Nothing to index: bm25s would fail with "max() arg is an empty sequence"."""
    skipped = len(extra.get("report", {}).get("skipped_files", []))
    why = f"; {skipped} file(s) were skipped, see `python -m rag ingest --strict`" \
        if skipped else ""
    return InputError(f"The book at {extra.get('book_root', book_id)} has no text to index: its "
                      f"chapters are empty or hold only headings{why}. Add text under the "
                      "headings and run `python -m rag ingest` again.")


def _write_files(directory: Path, chunks: list[Chunk], texts: list[str], manifest: dict
                 ) -> None:
    """Each file is written beside its final name and renamed, the manifest last: a process
    killed at any point leaves the old index or the new one, never an empty chunks.jsonl under
    a manifest that says it is fresh."""
    directory.mkdir(parents=True, exist_ok=True)
    LexicalIndex.build(texts).save(directory / "bm25")
    tmp_chunks = directory / (CHUNKS_FILE + ".tmp")
    with open(tmp_chunks, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(_payload(c), ensure_ascii=False) + "\n" for c in chunks)
    tmp_chunks.replace(directory / CHUNKS_FILE)
    manifest = {**manifest, "lexical": lexical_signature(), "chunks": len(chunks),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    tmp = directory / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, default=str))  # YAML dates and the like
    tmp.replace(directory / MANIFEST)


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
