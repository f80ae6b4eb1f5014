"""Ingest streams (issue 40, item 6): chunks and sentences are embedded a batch at a time and each
batch is written before the next is embedded; every point carries the hash of its text, so what
the store holds, not the manifest, decides what is embedded again.

Real MiniLM and local Qdrant on one module of the sample book (38 chunks); smaller batches than
the default so the module makes several.
"""

from __future__ import annotations

import numpy as np
import pytest

from rag.book.chunk import chunk_text_hash
from rag.index import ingest
from rag.index.build import open_index, read_manifest, sync_index
from rag.index.manifest import collection_dir, collection_name
from rag.index.progress import embed_cost
from rag.index.sentences import LOG_FILE
from rag.index.vector_file import VectorLog
from rag.index.vectors import TEXT_HASH, VectorStore
from tests.builders import CountingEmbedder

SMALL_BATCH = 3000  # cost units: about 6 chunks


class Recording(CountingEmbedder):
    """The real embedder, noting each call's size among the writes it is interleaved with."""

    def __init__(self, inner, events: list[tuple[str, int]]) -> None:
        super().__init__(inner)
        self.events = events

    def embed_documents(self, texts: list[str], progress=None) -> np.ndarray:
        self.events.append(("embed", len(texts)))
        return super().embed_documents(texts, progress)


@pytest.fixture
def events(monkeypatch) -> list[tuple[str, int]]:
    """("embed" | "write" | "log", how many texts) in the order they happened."""
    noted: list[tuple[str, int]] = []
    upsert, append = VectorStore.upsert, VectorLog.append
    monkeypatch.setattr(VectorStore, "upsert", lambda self, name, ids, *rest: (
        noted.append(("write", len(ids))), upsert(self, name, ids, *rest))[1])
    monkeypatch.setattr(VectorLog, "append", lambda self, texts, vectors: (
        noted.append(("log", len(texts))), append(self, texts, vectors))[1])
    monkeypatch.setattr(ingest, "BATCH_COST", SMALL_BATCH)
    return noted


def test_each_batch_is_written_before_the_next_is_embedded(book, index_dir, store, embedder,
                                                           events) -> None:
    sync_index(book, index_dir, Recording(embedder, events), store)
    kinds = [kind for kind, _ in events]
    first_log = kinds.index("log")
    chunk_part, sentence_part = events[:first_log - 1], events[first_log - 1:]
    assert len(chunk_part) >= 8 and len(sentence_part) >= 2
    for part, write in ((chunk_part, "write"), (sentence_part, "log")):
        embeds, writes = part[0::2], part[1::2]  # embed, write, embed, write, ...
        assert {kind for kind, _ in embeds} == {"embed"} and {k for k, _ in writes} == {write}
        assert [n for _, n in embeds] == [n for _, n in writes]
    assert sum(n for kind, n in chunk_part if kind == "write") == 38
    assert max(n for kind, n in events if kind == "embed") <= 256
    assert not (collection_dir(index_dir, collection_name("mini-book", embedder))
                / LOG_FILE).exists()  # the log is folded into the table once published


def test_a_batch_stays_within_its_cost_and_keeps_order() -> None:
    texts = [f"sentence number {i} " * (1 + i % 40) for i in range(500)]
    batches = list(ingest._batches(texts))
    assert [t for batch in batches for t in batch] == texts
    largest = max(embed_cost(t) for t in texts)
    assert all(sum(embed_cost(t) for t in b) < ingest.BATCH_COST + largest for b in batches)
    assert all(len(b) <= 256 for b in batches)


def test_every_point_carries_the_hash_of_its_text(book, index_dir, store, embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    name = collection_name("mini-book", embedder)
    manifest = read_manifest(collection_dir(index_dir, name))
    chunks = open_index("mini-book", index_dir, embedder, store).chunks
    assert store.stored_hashes(name) == manifest["hashes"] == {
        c.chunk_id: chunk_text_hash(c) for c in chunks}


def test_the_store_decides_what_is_embedded_again(book, index_dir, store, embedder) -> None:
    """A point with another text's hash, or none (written before hashes were kept), is
    embedded again although the manifest lists it as current."""
    sync_index(book, index_dir, embedder, store)
    name = collection_name("mini-book", embedder)
    first, second = sorted(store.stored_hashes(name))[:2]
    store.call("mark a point", "set_payload", name, payload={TEXT_HASH: "another text"},
               points=[first], wait=True)
    store.call("unmark a point", "delete_payload", name, keys=[TEXT_HASH], points=[second],
               wait=True)
    counting = CountingEmbedder(embedder)
    summary = sync_index(book, index_dir, counting, store)
    assert summary.embedded == 2 and counting.embedded == 2 and not summary.rebuilt
    hashes = store.stored_hashes(name)
    assert "" not in hashes.values() and "another text" not in hashes.values()


def test_a_stopped_ingest_resumes_with_only_what_was_not_written(book, index_dir, store,
                                                                 embedder, monkeypatch) -> None:
    monkeypatch.setattr(ingest, "BATCH_COST", SMALL_BATCH)
    real, written = VectorStore.upsert, []

    def stop_after_two(self, name, ids, *rest):
        if len(written) == 2:
            raise KeyboardInterrupt  # as a kill would stop it
        written.append(len(ids))
        real(self, name, ids, *rest)

    monkeypatch.setattr(VectorStore, "upsert", stop_after_two)
    with pytest.raises(KeyboardInterrupt):
        sync_index(book, index_dir, embedder, store)
    monkeypatch.setattr(VectorStore, "upsert", real)
    assert len(store.stored_hashes(collection_name("mini-book", embedder))) == sum(written)

    summary = sync_index(book, index_dir, embedder, store)
    assert summary.embedded == 38 - sum(written) and not summary.rebuilt
    assert len(open_index("mini-book", index_dir, embedder, store).chunks) == 38
