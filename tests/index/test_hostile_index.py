"""A broken or empty index is "rebuild needed", said plainly; an empty book says so (issue 12,
items 4, 8, 12 and 13). Real MiniLM and local Qdrant on one module of the sample book."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.book.parse import parse_book
from rag.errors import BookIndexError, InputError
from rag.index import ingest
from rag.index.build import collection_dir, collection_name, index_status, open_index, sync_index
from rag.index.manifest import INTERRUPTED
from rag.index.vectors import open_store


def files_of(index_dir: Path, embedder) -> Path:
    return collection_dir(index_dir, collection_name("mini-book", embedder))


def test_a_book_with_no_text_says_so(tmp_path: Path, index_dir, store, embedder) -> None:
    root = tmp_path / "empty-book"
    root.mkdir()
    (root / "headings.md").write_text("# Title\n\n## Only a heading\n\n### Another\n")
    (root / "empty.md").write_text("")
    (root / "broken.md").write_text("---\ntitle: [unclosed\n---\n\nText.\n")
    with pytest.raises(InputError) as error:
        sync_index(root, index_dir, embedder, store)
    assert str(error.value) == (
        f"The book at {root} has no text to index: its chapters are empty or hold only "
        "headings; 1 file(s) were skipped, see `python -m rag ingest --strict`. Add text under "
        "the headings and run `python -m rag ingest` again.")


@pytest.mark.parametrize(("damage", "problem"), [
    (lambda d: (d / "chunks.jsonl").write_text(""),
     "chunks.jsonl has 0 chunks, the manifest says 38"),
    (lambda d: (d / "chunks.jsonl").write_bytes((d / "chunks.jsonl").read_bytes()[:-100]),
     "chunks.jsonl ends mid-line"),
    (lambda d: (d / "chunks.jsonl").unlink(), "chunks.jsonl is missing or unreadable"),
    (lambda d: (d / "bm25" / "vocab.index.json").unlink(), "BM25 files are missing"),
])
def test_an_inconsistent_index_is_rebuild_needed(book, index_dir, store, embedder, damage,
                                                 problem) -> None:
    sync_index(book, index_dir, embedder, store)
    directory = files_of(index_dir, embedder)
    damage(directory)
    status = index_status(parse_book(book), index_dir, embedder)
    assert not status["fresh"] and status["reason"] == f"the index is incomplete ({problem})"
    with pytest.raises(BookIndexError) as error:
        open_index("mini-book", index_dir, embedder, store)
    assert str(error.value) == (f"The index in {directory} is incomplete ({problem}); rebuild it "
                                "with `python -m rag ingest --rebuild`.")
    sync_index(book, index_dir, embedder, store)  # what `make run` does for a stale index
    assert len(open_index("mini-book", index_dir, embedder, store).chunks) == 38


def test_a_write_that_fails_midway_is_stale_until_the_next_ingest(book, index_dir, store,
                                                                  embedder, monkeypatch) -> None:
    """Stopped while writing the chunk table: the old table is whole, and the manifest says an
    ingest stopped, so nothing opens it as fresh; the next ingest finishes without embedding."""
    sync_index(book, index_dir, embedder, store)
    real, calls = ingest._payload, []

    def fail_after_ten(chunk):
        calls.append(chunk)
        if len(calls) > 10:
            raise KeyboardInterrupt  # as a SIGKILL would stop the writer
        return real(chunk)

    monkeypatch.setattr(ingest, "_payload", fail_after_ten)
    with pytest.raises(KeyboardInterrupt):
        sync_index(book, index_dir, embedder, store)
    monkeypatch.undo()
    directory = files_of(index_dir, embedder)
    assert len((directory / "chunks.jsonl").read_text().splitlines()) == 38
    status = index_status(parse_book(book), index_dir, embedder)
    assert not status["fresh"] and status["reason"] == INTERRUPTED
    with pytest.raises(BookIndexError, match=r"was being written when its ingest stopped"):
        open_index("mini-book", index_dir, embedder, store)
    assert sync_index(book, index_dir, embedder, store).embedded == 0
    assert len(open_index("mini-book", index_dir, embedder, store).chunks) == 38


@pytest.mark.parametrize("text", ["[]", "42", '{"embedder": "x"}', '{"chunks": "38"}'])
def test_a_manifest_that_is_not_an_object_counts_as_missing(book, index_dir, store, embedder,
                                                            text) -> None:
    sync_index(book, index_dir, embedder, store)
    (files_of(index_dir, embedder) / "manifest.json").write_text(text)
    status = index_status(parse_book(book), index_dir, embedder)
    assert status == {"exists": False, "fresh": False, "reason": "no index has been built yet"}
    with pytest.raises(BookIndexError, match="No index for this book"):
        open_index("mini-book", index_dir, embedder, store)
    assert sync_index(book, index_dir, embedder, store).rebuilt


def test_damaged_vector_storage_is_removed_and_rebuilt(book, index_dir, embedder) -> None:
    first = open_store(index_dir)
    sync_index(book, index_dir, embedder, first)
    first.close()
    name = collection_name("mini-book", embedder)
    storage = index_dir / "qdrant" / "collection" / name / "storage.sqlite"
    with open(storage, "r+b") as f:  # "database disk image is malformed"
        f.seek(100)
        f.write(b"\xff" * 3000)
    store = open_store(index_dir)
    try:
        assert not index_status(parse_book(book), index_dir, embedder)["fresh"]
        summary = sync_index(book, index_dir, embedder, store, rebuild=True)
        assert summary.embedded == 38
        index = open_index("mini-book", index_dir, embedder, store)
        assert len(index.chunks) == 38 and store.count(name) == 38
    finally:
        store.close()


def test_damage_outside_a_collection_names_the_folder_to_remove(index_dir) -> None:
    where = index_dir / "qdrant"
    where.mkdir(parents=True)
    (where / "meta.json").write_text('{"collections": ')  # torn
    with pytest.raises(BookIndexError) as error:
        open_store(index_dir)
    assert str(error.value).endswith(f"; if its files are damaged, remove the folder "
                                     f"{where.resolve()} and run `python -m rag ingest --rebuild`.")
