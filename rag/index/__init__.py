"""The index of one book: vectors in Qdrant (`vectors`), BM25 over the same chunks (`lexical`:
bm25s files, or sparse vectors in the same Qdrant collection when the lexical backend is qdrant,
`sparse`), sentence vectors (`sentences`), written by a streamed, resumable ingest (`ingest`)
under a manifest that says whether it committed (`manifest`), opened by `build` and opened or
built for a Settings (`load`)."""

from __future__ import annotations

from rag.index.build import BookIndex, IngestSummary, index_status, open_index, sync_index
from rag.index.lexical import LexicalIndex, tokenize
from rag.index.load import build_index, load_index
from rag.index.vectors import VectorStore, open_store

__all__ = [
    "BookIndex", "IngestSummary", "LexicalIndex", "VectorStore", "build_index", "index_status",
    "load_index", "open_index", "open_store", "sync_index", "tokenize"
]
