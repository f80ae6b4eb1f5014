"""Open (and if needed build) the index a Settings object points at."""

from __future__ import annotations

import dataclasses

from rag.book.parse import book_id_for, content_hash, parse_book
from rag.config import Settings, get_secret
from rag.index.build import BookIndex, IngestSummary, Progress, open_index, sync_index
from rag.index.lexical import lexical_backend
from rag.index.manifest import collection_dir, collection_name, content_status, read_manifest
from rag.index.vectors import VectorStore, open_store
from rag.providers.registry import get_embedder, prepare_embedder


def store_for(settings: Settings, read_only: bool = False) -> VectorStore:
    """The settings' vector store; `read_only` lets a process search a copy of an embedded
    store another process holds (rag.index.snapshot)."""
    return open_store(settings.index_dir, settings.qdrant_url, get_secret("QDRANT_API_KEY"),
                      read_only=read_only)


def book_status(settings: Settings) -> dict:
    """Index freshness for the sidebar and `make run`; embeds nothing. A fresh index answers
    from its manifest's report, the book's bytes hashed but not parsed again."""
    embedder = get_embedder(settings)
    book_id = book_id_for(settings.book_dir)
    status = _status(settings, book_id, embedder)
    report = {}
    if status["fresh"]:  # what the last ingest read of this very book
        manifest = read_manifest(collection_dir(settings.index_dir,
                                                collection_name(book_id, embedder)))
        report = (manifest or {}).get("report") or {}
    if not {"files", "sections", "unstable_ids"} <= report.keys():
        report = dataclasses.asdict(parse_book(settings.book_dir).report)
    return {**status, "book_id": book_id, "files": report["files"],
            "sections": report["sections"], "unstable_ids": report["unstable_ids"]}


def _status(settings: Settings, book_id: str, embedder) -> dict:
    """content_status of the book as it is on disk (its bytes hashed, not parsed)."""
    return content_status(book_id, content_hash(settings.book_dir), settings.index_dir, embedder,
                          lexical=lexical_backend(settings.qdrant_url))


def build_index(settings: Settings, rebuild: bool = False, progress: Progress | None = None
                ) -> IngestSummary:
    summary = sync_index(settings.book_dir, settings.index_dir, get_embedder(settings),
                         store_for(settings), rebuild=rebuild, progress=progress)
    # MiniLM is exported to ONNX at its first embedding; this makes the export even when nothing
    # needed embedding, so no question waits for it (and a broken book fails before any of it).
    prepare_embedder(settings)
    return summary


def load_index(settings: Settings, build: bool = True, progress: Progress | None = None
               ) -> tuple[BookIndex, IngestSummary | None]:
    """The index for settings.book_dir; built or brought up to date first when `build`."""
    embedder = get_embedder(settings)
    book_id = book_id_for(settings.book_dir)  # the book is parsed only when it must be indexed
    summary = None
    if build and not _status(settings, book_id, embedder)["fresh"]:
        summary = build_index(settings, progress=progress)
    # Built and fresh: from here the index is only read, so another process may hold the store.
    return open_index(book_id, settings.index_dir, embedder,
                      store_for(settings, read_only=True)), summary
