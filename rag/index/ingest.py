"""Index any sections (a book's, a BEIR corpus's) under a book id: streamed, resumable, and safe
to kill at any point.

1. Chunk the sections and plan the sentence table; nothing is written yet.
2. Mark the manifest "writing" (rag.index.manifest), then change the vector store: each batch of
   chunks is embedded and written at once, its payload carrying the hash of the text its vector
   is of; sentence vectors go to a log the same way (rag.index.sentences). Memory holds one
   batch of vectors, whatever the book's size.
3. Build BM25, write the files beside their final names and rename them into place, and commit
   the manifest last.

What is already embedded is read from the store and the log, not from the manifest: a run killed
in step 2 is resumed by the next one, which embeds only what is missing or belongs to other text
(a reverted edit, say), and until a run commits, the index says it is stale.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from rag.book.chunk import ChunkerSettings, chunk_book, chunk_text_hash, embed_text_for
from rag.errors import BookIndexError, InputError
from rag.index.durable import replace_file
from rag.index.lexical import QDRANT, LexicalIndex
from rag.index.local_store import is_read_only, read_only_error
from rag.index.manifest import (
    CHUNKS_FILE,
    MANIFEST,
    collection_dir,
    collection_name,
    commit_manifest,
    mark_writing,
    read_manifest,
)
from rag.index.progress import (
    CHUNK,
    CHUNKS,
    DONE,
    LEXICAL,
    SENTENCES,
    SPLIT,
    WRITE,
    IngestProgress,
    Progress,
    embed_cost,
)
from rag.index.sentences import (
    ASKS_FILE,
    LOG_FILE,
    SENTENCE_VERSION,
    VECTORS_FILE,
    SentencePlan,
    embed_sentences,
    plan_sentences,
    publish_sentences,
)
from rag.index.sparse import sync_sparse
from rag.index.vectors import TEXT_HASH, VectorStore
from rag.providers.base import Embedder
from rag.types import Chunk, Section

# Texts per embedding call, by cost (rag.index.progress.embed_cost): ~32 full chunks or 256
# sentences, a few seconds each on one core, so progress moves and a kill loses little.
BATCH_COST = 16_384
SECTIONS_PER_STEP = 64  # sections chunked between two progress reports
SENTENCE_FILES = (VECTORS_FILE, ASKS_FILE, LOG_FILE)  # depend on the embedder, not the chunker


@dataclass(frozen=True)
class SyncResult:
    chunks: int
    embedded: int
    removed: int
    rebuilt: bool


def sync_sections(sections: list[Section], book_id: str, content_hash: str, index_dir: Path,
                  embedder: Embedder, store: VectorStore, extra: dict | None = None,
                  rebuild: bool = False, progress: Progress | IngestProgress | None = None,
                  sentences: bool = True) -> SyncResult:
    """Bring the index of `book_id` in line with `sections`, embedding only chunks (and, with
    `sentences`, sentence units for extractive answers) that the index does not hold yet."""
    tracker = progress if isinstance(progress, IngestProgress) else IngestProgress(progress)
    settings = ChunkerSettings(embedder.max_tokens)
    chunks = _chunk(sections, book_id, settings, embedder, tracker)
    if not chunks:
        raise _no_text_error(book_id, extra or {})
    directory = collection_dir(index_dir, collection_name(book_id, embedder))
    header = {"book_id": book_id, "chunker": settings.describe(),
              "embedder": {"name": embedder.name, "model_id": embedder.model_id,
                           "dim": embedder.dim}}
    try:
        result = _sync(chunks, sections if sentences else None, directory, header, embedder,
                       store, rebuild, tracker)
        _publish(directory, store, chunks, result.plan, embedder.dim, tracker, {
            **header, "book_hash": content_hash, "hashes": result.hashes,
            **({"sentences": SENTENCE_VERSION} if sentences else {}), **(extra or {})})
    except OSError as e:
        if is_read_only(e):
            raise read_only_error(Path(index_dir), e) from e
        raise BookIndexError(f"Could not write the index in {directory} ({e}); fix that and run "
                             "`python -m rag ingest` again: it resumes where this one stopped."
                             ) from e
    tracker.start(DONE)
    return SyncResult(len(chunks), result.embedded, result.removed, result.rebuilt)


@dataclass(frozen=True)
class _Written:
    hashes: dict[str, str]  # chunk id -> hash of the text its vector is of
    plan: SentencePlan | None
    embedded: int
    removed: int
    rebuilt: bool


def _sync(chunks: list[Chunk], sections: list[Section] | None, directory: Path, header: dict,
          embedder: Embedder, store: VectorStore, rebuild: bool, tracker: IngestProgress
          ) -> _Written:
    """Mark the index as being written, then bring its vectors (store and sentence log) in line
    with the chunks and sections."""
    name = directory.name
    manifest = read_manifest(directory) or {}
    fresh = rebuild or not _compatible(manifest, header, store, name)
    if fresh:  # marked first, naming no model: a kill while clearing is cleared again
        mark_writing(directory, {})
        same_model = manifest.get("embedder", {}).get("model_id") == embedder.model_id
        _clear(store, name, directory,
               keep=(MANIFEST, *(SENTENCE_FILES if same_model and not rebuild else ())))
    mark_writing(directory, {**({} if fresh else manifest), **header})  # now a kill resumes
    if not store.has_collection(name):
        store.create(name, embedder.dim, sparse=store.lexical == QDRANT)
    hashes = {c.chunk_id: chunk_text_hash(c) for c in chunks}
    stored = store.stored_hashes(name)
    # Shortest first, as the sentences: a batch of like lengths pads little (the short last
    # chunks of sections are many in a big book).
    todo = sorted((c for c in chunks if stored.get(c.chunk_id) != hashes[c.chunk_id]),
                  key=lambda c: len(_text(c)))
    removed = [cid for cid in stored if cid not in hashes]
    plan = _plan(directory, sections, embedder, tracker) if sections is not None else None
    tracker.plan(sum(embed_cost(_text(c)) for c in todo),
                 sum(embed_cost(t) for t in plan.todo) if plan else 0.0)
    store.delete(name, removed)
    _embed_chunks(store, name, todo, hashes, embedder, tracker)
    if plan is not None:
        tracker.start(SENTENCES, len(plan.todo))
        for batch in embed_sentences(directory, _batches(plan.todo), embedder):
            tracker.advance(len(batch), sum(embed_cost(t) for t in batch))
    return _Written(hashes, plan, len(todo), len(removed), fresh)


def _chunk(sections: list[Section], book_id: str, settings: ChunkerSettings, embedder: Embedder,
           tracker: IngestProgress) -> list[Chunk]:
    tracker.start(CHUNK, len(sections))
    chunks: list[Chunk] = []
    for start in range(0, len(sections), SECTIONS_PER_STEP):
        part = sections[start:start + SECTIONS_PER_STEP]
        chunks += chunk_book(part, book_id, settings, embedder.count_tokens_batch)
        tracker.advance(len(part))
    return chunks


def _plan(directory: Path, sections: list[Section], embedder: Embedder,
          tracker: IngestProgress) -> SentencePlan:
    tracker.start(SPLIT, len(sections))
    plan = plan_sentences(directory, sections, embedder.dim)
    tracker.advance(len(sections))
    return plan


def _compatible(manifest: dict, header: dict, store: VectorStore, name: str) -> bool:
    """Whether the vectors held for `name` may be kept: same chunker and model, and a collection
    of the right kind (the sparse vector beside the dense one when BM25 lives in Qdrant)."""
    return (manifest.get("chunker") == header["chunker"]
            and manifest.get("embedder", {}).get("model_id") == header["embedder"]["model_id"]
            and store.has_collection(name)
            and (store.lexical != QDRANT or store.has_sparse(name)))


def _clear(store: VectorStore, name: str, directory: Path, keep: tuple[str, ...]) -> None:
    """Drop the collection and the index's files but those named in `keep` (the manifest, which
    says the index is being written, and sentence vectors the same model can reuse)."""
    store.drop(name)
    if directory.is_dir():
        for path in directory.iterdir():
            if path.name not in keep:
                shutil.rmtree(path) if path.is_dir() else path.unlink()


def _text(chunk: Chunk) -> str:
    return embed_text_for(chunk.heading_path, chunk.text)


def _batches(texts: list[str]) -> Iterator[list[str]]:
    """Consecutive runs of `texts` of about BATCH_COST each (at most 256 texts)."""
    batch: list[str] = []
    cost = 0.0
    for text in texts:
        batch.append(text)
        cost += embed_cost(text)
        if cost >= BATCH_COST or len(batch) >= 256:
            yield batch
            batch, cost = [], 0.0
    if batch:
        yield batch


def _embed_chunks(store: VectorStore, name: str, todo: list[Chunk], hashes: dict[str, str],
                  embedder: Embedder, tracker: IngestProgress) -> None:
    """Embed and write the chunks a batch at a time, each point with its text's hash."""
    tracker.start(CHUNKS, len(todo))
    done = 0
    for batch in _batches([_text(c) for c in todo]):
        part = todo[done:done + len(batch)]
        store.upsert(name, [c.chunk_id for c in part], embedder.embed_documents(batch),
                     [_payload(c) | {TEXT_HASH: hashes[c.chunk_id]} for c in part])
        done += len(batch)
        tracker.advance(len(batch), sum(embed_cost(t) for t in batch))


def _publish(directory: Path, store: VectorStore, chunks: list[Chunk], plan: SentencePlan | None,
             dim: int, tracker: IngestProgress, manifest: dict) -> None:
    """BM25, the sentence table and the chunk table, each renamed into place once written;
    then the manifest, which is what says they belong together."""
    tracker.start(LEXICAL)
    texts = [_text(c) for c in chunks]
    if store.lexical == QDRANT:
        manifest["sparse"] = sync_sparse(store, directory.name, [c.chunk_id for c in chunks],
                                         texts)
    LexicalIndex.build(texts).save(directory / "bm25")
    del texts
    tracker.start(WRITE)
    if plan is not None:
        publish_sentences(directory, plan, dim)
    tmp = directory / (CHUNKS_FILE + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(_payload(c), ensure_ascii=False) + "\n" for c in chunks)
    replace_file(tmp, directory / CHUNKS_FILE)
    commit_manifest(directory, {**manifest, "chunks": len(chunks)})


def _payload(chunk: Chunk) -> dict:
    data = asdict(chunk)
    data["heading_path"] = list(chunk.heading_path)
    return data


def _no_text_error(book_id: str, extra: dict) -> InputError:
    """Nothing to index: bm25s would fail with "max() arg is an empty sequence"."""
    skipped = len(extra.get("report", {}).get("skipped_files", []))
    why = f"; {skipped} file(s) were skipped, see `python -m rag ingest --strict`" \
        if skipped else ""
    return InputError(f"The book at {extra.get('book_root', book_id)} has no text to index: its "
                      f"chapters are empty or hold only headings{why}. Add text under the "
                      "headings and run `python -m rag ingest` again.")
