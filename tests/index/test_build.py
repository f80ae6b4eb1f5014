"""The index kept in step with the book: incremental re-ingest, manifest rebuilds, store locking.

Real MiniLM and real local Qdrant on a copy of one module of the sample book (38 chunks), so a
full embedding costs about a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag.book.parse import parse_book
from rag.errors import BookIndexError
from rag.index.build import (
    collection_dir,
    collection_name,
    dense_scores_for,
    index_status,
    open_index,
    read_manifest,
    sync_index,
)
from rag.index.vectors import VectorStore, open_store
from tests.builders import PROJECT_ROOT

LIDAR = "## Lidar {#lidar}"


def manifest_of(index_dir: Path, embedder) -> dict:
    manifest = read_manifest(collection_dir(index_dir, collection_name("mini-book", embedder)))
    assert manifest is not None
    return manifest


def stored_chunk_ids(index_dir: Path, embedder) -> list[str]:
    path = collection_dir(index_dir, collection_name("mini-book", embedder)) / "chunks.jsonl"
    return [json.loads(line)["chunk_id"] for line in path.read_text().splitlines()]


def section_ids(index_dir: Path, embedder, key: str) -> set[str]:
    path = collection_dir(index_dir, collection_name("mini-book", embedder)) / "chunks.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {r["chunk_id"] for r in rows
            if f"{r['module_id']}/{r['chapter_id']}#{r['section_id']}" == key}


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_first_ingest_embeds_everything(book, index_dir, store, embedder) -> None:
    summary = sync_index(book, index_dir, embedder, store)
    assert summary.files == 4 and summary.chunks == 38
    assert (summary.embedded, summary.reused, summary.removed) == (38, 0, 0)
    name = collection_name("mini-book", embedder)
    assert store.count(name) == 38 == len(stored_chunk_ids(index_dir, embedder))
    manifest = manifest_of(index_dir, embedder)
    assert manifest["book_hash"] == parse_book(book).content_hash
    assert manifest["embedder"] == {"name": "local", "model_id": embedder.model_id, "dim": 384}
    assert manifest["chunker"]["max_tokens"] == 256 and len(manifest["hashes"]) == 38
    assert (collection_dir(index_dir, name) / "bm25").is_dir()


def test_unchanged_book_embeds_nothing(book, index_dir, store, embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    before = manifest_of(index_dir, embedder)["hashes"]
    again = sync_index(book, index_dir, embedder, store)
    assert (again.embedded, again.reused, again.removed, again.rebuilt) == (0, 38, 0, False)
    assert manifest_of(index_dir, embedder)["hashes"] == before
    assert index_status(parse_book(book), index_dir, embedder)["fresh"]


def test_editing_one_section_re_embeds_only_its_chunks(book, index_dir, store, embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    before = manifest_of(index_dir, embedder)["hashes"]
    name = collection_name("mini-book", embedder)
    untouched_id = sorted(section_ids(index_dir, embedder, "sensing/sensor-fusion#why-fuse"))[0]
    untouched_vector = store.fetch_vectors(name, [untouched_id])[untouched_id]

    edit(book / "sensing" / "exteroception.md", LIDAR + "\n",
         LIDAR + "\n\nSolid-state lidar has no spinning parts and survives falls better.\n")
    status = index_status(parse_book(book), index_dir, embedder)
    assert not status["fresh"] and "the book changed" in status["reason"]
    summary = sync_index(book, index_dir, embedder, store)

    after = manifest_of(index_dir, embedder)["hashes"]
    changed = {cid for cid in after if before.get(cid) != after[cid]}
    lidar = section_ids(index_dir, embedder, "sensing/exteroceptive-sensing#lidar")
    assert changed == lidar and summary.embedded == len(lidar) >= 1
    assert summary.reused == summary.chunks - len(lidar) and summary.removed == 0
    # The stored vector of the edited chunk is the new text's, the others are untouched.
    [lidar_id] = sorted(lidar)[:1]
    chunk = next(c for c in open_index("mini-book", index_dir, embedder, store).chunks
                 if c.chunk_id == lidar_id)
    assert "Solid-state lidar" in chunk.text
    fresh = embedder.embed_documents([f"{' > '.join(chunk.heading_path)}\n{chunk.text}"])[0]
    stored = store.fetch_vectors(name, [lidar_id, untouched_id])
    assert np.allclose(stored[lidar_id], fresh, atol=1e-5)
    assert np.array_equal(stored[untouched_id], untouched_vector)


def test_deleting_a_section_removes_its_chunks(book, index_dir, store, embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    lidar = section_ids(index_dir, embedder, "sensing/exteroceptive-sensing#lidar")
    path = book / "sensing" / "exteroception.md"
    text = path.read_text()
    start, end = text.index(LIDAR), text.index("## Tactile Sensing")
    path.write_text(text[:start] + text[end:])

    summary = sync_index(book, index_dir, embedder, store)
    name = collection_name("mini-book", embedder)
    assert (summary.embedded, summary.removed) == (0, len(lidar))
    assert store.fetch_vectors(name, sorted(lidar)) == {}
    assert not lidar & set(stored_chunk_ids(index_dir, embedder))
    assert store.count(name) == summary.chunks == 38 - len(lidar)
    index = open_index("mini-book", index_dir, embedder, store)
    assert index.lexical.size == len(index.chunks) == summary.chunks


def test_deleting_a_file_removes_its_chunks(book, index_dir, store, embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    (book / "sensing" / "sensor-fusion.md").unlink()
    summary = sync_index(book, index_dir, embedder, store)
    assert summary.files == 3 and summary.removed == 12 and summary.embedded == 0
    assert store.count(collection_name("mini-book", embedder)) == 26


@pytest.mark.parametrize(("field", "value", "reason"), [
    ("chunker", {"version": "0", "max_tokens": 256, "overlap": 0.2}, "chunker settings changed"),
    ("embedder", {"name": "local", "model_id": "another/model", "dim": 384}, "embedder changed"),
])
def test_a_different_chunker_or_embedder_rebuilds(book, index_dir, store, embedder, field,
                                                   value, reason) -> None:
    sync_index(book, index_dir, embedder, store)
    directory = collection_dir(index_dir, collection_name("mini-book", embedder))
    manifest = manifest_of(index_dir, embedder)
    manifest[field] = value
    (directory / "manifest.json").write_text(json.dumps(manifest))
    status = index_status(parse_book(book), index_dir, embedder)
    assert not status["fresh"] and status["reason"] == reason

    summary = sync_index(book, index_dir, embedder, store)
    assert summary.rebuilt and (summary.embedded, summary.reused) == (38, 0)
    assert manifest_of(index_dir, embedder)[field] != value


def test_rebuild_flag_re_embeds_everything(book, index_dir, store, embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    summary = sync_index(book, index_dir, embedder, store, rebuild=True)
    assert summary.rebuilt and summary.embedded == 38 and summary.removed == 0
    assert store.count(collection_name("mini-book", embedder)) == 38


def test_vectors_lost_from_qdrant_trigger_a_rebuild(book, index_dir, store, embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    store.drop(collection_name("mini-book", embedder))
    summary = sync_index(book, index_dir, embedder, store)
    assert summary.rebuilt and summary.embedded == 38
    assert store.count(collection_name("mini-book", embedder)) == 38


def test_open_index_without_a_build_says_how_to_build(index_dir, store, embedder) -> None:
    with pytest.raises(BookIndexError, match=r"build it with `python -m rag ingest`"):
        open_index("mini-book", index_dir, embedder, store)


def test_stored_vectors_give_the_same_cosine_as_the_embedder(book, index_dir, store,
                                                             embedder) -> None:
    sync_index(book, index_dir, embedder, store)
    index = open_index("mini-book", index_dir, embedder, store)
    query = embedder.embed_query("how does a Kalman filter weigh a new measurement?")
    chunks = index.chunks[:5]
    direct = embedder.embed_documents([f"{' > '.join(c.heading_path)}\n{c.text}"
                                       for c in chunks]) @ query
    scores = dense_scores_for(index, query, [c.chunk_id for c in chunks])
    assert np.allclose([scores[c.chunk_id] for c in chunks], direct, atol=1e-5)
    searched = dict(store.search(index.collection, query, 38))
    assert all(abs(searched[c.chunk_id] - scores[c.chunk_id]) < 1e-5 for c in chunks)


def test_unusual_frontmatter_values_do_not_break_the_manifest(book, index_dir, store,
                                                              embedder) -> None:
    path = book / "sensing" / "intro.md"
    body = path.read_text().split("---\n", 2)[2]
    path.write_text("---\nid: sensing-intro\ndescription: 2024-05-01\npage: 7\n---\n" + body)
    sync_index(book, index_dir, embedder, store)
    chapter = manifest_of(index_dir, embedder)["chapters"]["sensing/sensing-intro"]
    assert chapter["description"] == "2024-05-01" and chapter["page"] == 7


HOLD_STORE = """
import sys
from rag.index.vectors import open_store
open_store(sys.argv[1])
print("ready", flush=True)
sys.stdin.read()
"""


def test_a_store_held_by_another_process_is_a_clear_error(tmp_path: Path) -> None:
    index_dir = tmp_path / "held"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_STORE, str(index_dir)],
                              cwd=PROJECT_ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(BookIndexError, match="in use by another Folio process") as caught:
            open_store(index_dir)
        assert "use another --index DIR" in str(caught.value)
    finally:
        holder.communicate("", timeout=30)
    store = open_store(index_dir)  # released when the other process ends
    store.close()


def test_a_store_held_here_is_refused_to_another_process(tmp_path: Path) -> None:
    store = open_store(tmp_path / "held")
    try:
        probe = ("import sys\nfrom rag.index.vectors import open_store\n"
                 "from rag.errors import BookIndexError\ntry:\n    open_store(sys.argv[1])\n"
                 "except BookIndexError as e:\n    print(e)")
        out = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "held")],
                             cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
        assert "in use by another Folio process" in out.stdout
    finally:
        store.close()


def test_same_location_in_one_process_shares_one_client(tmp_path: Path) -> None:
    first = open_store(tmp_path / "shared")
    try:
        assert open_store(tmp_path / "shared") is first
    finally:
        first.close()


def test_in_memory_and_second_path_stores_are_independent(book, index_dir, store, embedder,
                                                          tmp_path) -> None:
    from qdrant_client import QdrantClient

    memory = VectorStore(QdrantClient(location=":memory:"), ":memory:")
    other = open_store(tmp_path / "other-index")
    try:
        on_disk = sync_index(book, index_dir, embedder, store)
        in_memory = sync_index(book, tmp_path / "memory-index", embedder, memory)
        edit(book / "sensing" / "exteroception.md", LIDAR + "\n", LIDAR + "\n\nNew words.\n")
        second = sync_index(book, tmp_path / "other-index", embedder, other)
        assert on_disk.embedded == in_memory.embedded == second.embedded == 38
        name = collection_name("mini-book", embedder)
        # Same vectors, same search, whichever backend holds them (a congruence check).
        query = embedder.embed_query("depth cameras in sunlight")
        assert [i for i, _ in store.search(name, query, 5)] == \
            [i for i, _ in memory.search(name, query, 5)]
        memory.drop(name)
        assert store.count(name) == 38 and memory.count(name) == 0 and other.count(name) == 38
    finally:
        memory.close()
        other.close()


def test_local_search_agrees_with_qdrant_itself(book, index_dir, store, embedder) -> None:
    """The local fast path (one matrix product) returns what Qdrant's own exact search does."""
    sync_index(book, index_dir, embedder, store)
    name = collection_name("mini-book", embedder)
    for text in ("gyroscope drift", "tactile skins on fingertips", "lidar on a walking robot"):
        query = embedder.embed_query(text)
        ours = store.search(name, query, 10)
        theirs = store._client.query_points(name, query=query.tolist(), limit=10).points
        assert [cid for cid, _ in ours] == [str(p.id) for p in theirs]
        assert np.allclose([s for _, s in ours], [p.score for p in theirs], atol=1e-6)
    ids = [cid for cid, _ in ours]
    records = store._client.retrieve(name, ids=ids, with_vectors=True)
    fetched = store.fetch_vectors(name, ids + ["00000000-0000-0000-0000-000000000000"])
    assert set(fetched) == set(ids)
    for record in records:
        assert np.allclose(fetched[str(record.id)], record.vector, atol=1e-7)


def test_local_search_sees_every_write(tmp_path: Path) -> None:
    import uuid

    from qdrant_client import QdrantClient

    store = VectorStore(QdrantClient(location=":memory:"), ":memory:")
    try:
        store.create("c", 3)
        assert store.search("c", np.array([1, 0, 0], dtype=np.float32), 5) == []
        ids = [str(uuid.uuid5(uuid.NAMESPACE_OID, str(i))) for i in range(3)]
        vectors = np.eye(3, dtype=np.float32)
        store.upsert("c", ids, vectors, [{}] * 3)
        assert store.search("c", np.array([0, 2, 0], dtype=np.float32), 1) == [(ids[1], 1.0)]
        store.delete("c", [ids[1]])
        assert [cid for cid, _ in store.search("c", np.array([0, 1, 0.1], dtype=np.float32),
                                                 3)][0] == ids[2]
        assert store.fetch_vectors("c", [ids[1]]) == {}
        store.upsert("c", [ids[0]], np.array([[0, 1, 0]], dtype=np.float32), [{}])
        assert store.search("c", np.array([0, 1, 0], dtype=np.float32), 1)[0][0] == ids[0]
        store.drop("c")
        with pytest.raises(BookIndexError, match="failed to read vectors"):
            store.search("c", np.array([1, 0, 0], dtype=np.float32), 1)
    finally:
        store.close()


def test_a_tokenizer_change_marks_the_index_stale(sample_index, sample_settings, embedder,
                                                  monkeypatch) -> None:
    from rag.index import manifest

    book = parse_book(sample_settings.book_dir)
    assert index_status(book, sample_settings.index_dir, embedder)["fresh"]
    monkeypatch.setattr(manifest, "lexical_signature", lambda: {"probe": ["changed"]})
    status = index_status(book, sample_settings.index_dir, embedder)
    assert not status["fresh"] and "BM25 tokenizer changed" in status["reason"]
