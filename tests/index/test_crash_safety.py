"""A killed ingest never leaves an index that calls itself fresh (issue 43, item 4), and the next
one resumes it, embedding only what was not written (issue 40, item 6).

The reproduction: edit a chapter, SIGKILL a real `rag ingest` (a subprocess) while it writes,
revert the edit. The index must say it is stale, and the next open must give what a clean build
of the book gives: the same chunks, vectors, sentence table, search results and answers.
The subprocess pauses at a chosen point (a wrapper around one function says so on stdout) and is
killed there; real MiniLM, local Qdrant, one module of the sample book (38 chunks).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag.answer.pipeline import Pipeline
from rag.book.parse import parse_book
from rag.config import load_settings
from rag.errors import BookIndexError
from rag.index.build import BookIndex, index_status, open_index, sync_index
from rag.index.load import load_index
from rag.index.manifest import INTERRUPTED, collection_dir, collection_name
from rag.index.vectors import open_store
from rag.retrieval.search import search_book
from tests.builders import PROJECT_ROOT, SAMPLE_BOOK, CountingEmbedder

CHAPTER = Path("sensing") / "exteroception.md"
DISCARDED = "Zorblax quokkas recalibrate every lidar twice a night with warm soup."
QUESTIONS = [DISCARDED, "How does a lidar behave in bright sunlight?",
             "What does a depth camera measure?"]
# Runs `rag ingest` with one function wrapped to print PAUSED and sleep at the chosen point;
# smaller embedding batches, so the chunk stage writes several.
KILLABLE_INGEST = """
import runpy, sys, time
from rag.index import ingest, manifest, sentences
from rag.index.lexical import LexicalIndex
from rag.index.vectors import VectorStore

point, args = sys.argv[1], sys.argv[2:]
ingest.BATCH_COST = 600


def pause():
    print("PAUSED", flush=True)
    time.sleep(600)


def pause_after(owner, name, calls, before=None):
    real, seen = getattr(owner, name), []

    def wrapper(*a, **k):
        seen.append(1)
        if len(seen) == calls and before:
            before(*a, **k)
            pause()
        result = real(*a, **k)
        if len(seen) == calls:
            pause()
        return result
    setattr(owner, name, wrapper)


def torn_record(log, texts, vectors):  # half a record after the first batch
    with open(log.path, "ab") as out:
        out.write(b"\\x01" * (log.type.itemsize // 2))


def half_manifest(path, text):  # the committing manifest cut before its rename
    path.with_name(path.name + ".tmp").write_text(text[: len(text) // 2])


if point == "chunks":
    pause_after(VectorStore, "upsert", 2)
elif point == "sentences":
    pause_after(sentences.VectorLog, "append", 1)
elif point == "torn":
    pause_after(sentences.VectorLog, "append", 2, before=torn_record)
elif point == "bm25":
    pause_after(LexicalIndex, "save", 1)
elif point == "sentence-table":
    pause_after(ingest, "publish_sentences", 1)
elif point == "manifest":
    pause_after(manifest, "write_text", 2, before=half_manifest)
sys.argv = ["rag", "ingest", *args]
runpy.run_module("rag", run_name="__main__")
"""


def kill_ingest_at(point: str, book: Path, index_dir: Path, tmp_path: Path) -> None:
    """Start `rag ingest`, wait until it pauses at `point`, SIGKILL it."""
    log = tmp_path / f"ingest-{point}.err"
    with open(log, "w") as err:
        child = subprocess.Popen([sys.executable, "-c", KILLABLE_INGEST, point, "--book",
                                  str(book), "--index", str(index_dir)], cwd=PROJECT_ROOT,
                                 stdout=subprocess.PIPE, stderr=err, text=True)
        line = child.stdout.readline().strip()
        if line == "PAUSED":
            os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        child.stdout.close()
    assert line == "PAUSED", f"the ingest never reached {point}: {log.read_text()[-2000:]}"
    assert child.returncode == -signal.SIGKILL


def edited(text: str) -> str:
    """Every paragraph of the chapter opens with a sentence of its own and says "the quokka"
    for "the": most chunks and sentences change."""
    return "\n\n".join(f"{DISCARDED} {block.replace(' the ', ' the quokka ')}"
                       if block[:1].isalpha() else block for block in text.split("\n\n"))


@pytest.fixture(scope="module")
def clean(tmp_path_factory, embedder):
    """The book as it is, built once, uninterrupted: what every recovered index must equal."""
    root = tmp_path_factory.mktemp("clean")
    book, index_dir = root / "mini-book", root / "index"
    shutil.copytree(SAMPLE_BOOK / "sensing", book / "sensing")
    store = open_store(index_dir)
    sync_index(book, index_dir, embedder, store)
    store.close()  # copied by each test while no process holds it
    store = open_store(index_dir)
    yield book, index_dir, open_index("mini-book", index_dir, embedder, store)
    store.close()


def copy_of(clean, tmp_path: Path) -> tuple[Path, Path]:
    book, index_dir = tmp_path / "mini-book", tmp_path / "index"
    shutil.copytree(clean[0], book)
    shutil.copytree(clean[1], index_dir, ignore=shutil.ignore_patterns(".lock"))
    return book, index_dir


def assert_same_index(got: BookIndex, want: BookIndex, settings) -> None:
    assert [(c.chunk_id, c.text) for c in got.chunks] == [(c.chunk_id, c.text)
                                                         for c in want.chunks]
    ids = [c.chunk_id for c in want.chunks]
    mine, theirs = (i.store.fetch_vectors(i.collection, ids) for i in (got, want))
    assert set(mine) == set(ids) and all(np.allclose(mine[c], theirs[c], atol=1e-4) for c in ids)
    assert got.sentences.texts == want.sentences.texts
    assert np.allclose(got.sentences.vectors, want.sentences.vectors, atol=2e-3)
    assert got.sentences.ask_vectors.keys() == want.sentences.ask_vectors.keys()
    for question in QUESTIONS:
        ours, clean_hits = (search_book(i, question, settings.retrieval) for i in (got, want))
        assert [(h.chunk.chunk_id, round(h.dense, 3), round(h.bm25, 3))
                for h in ours.candidates] == \
            [(h.chunk.chunk_id, round(h.dense, 3), round(h.bm25, 3))
             for h in clean_hits.candidates]
    for question in QUESTIONS[1:]:
        assert Pipeline(got, settings).answer(question).answer == \
            Pipeline(want, settings).answer(question).answer


@pytest.mark.parametrize("point", ["chunks", "sentences", "torn", "bm25", "sentence-table",
                                   "manifest"])
def test_killed_mid_ingest_then_reverted_is_stale_and_resumes_to_the_clean_build(
        point, clean, tmp_path, embedder) -> None:
    book, index_dir = copy_of(clean, tmp_path)
    chapter = book / CHAPTER
    original = chapter.read_text()
    chapter.write_text(edited(original))
    kill_ingest_at(point, book, index_dir, tmp_path)
    chapter.write_text(original)  # the edit is reverted: the book is the one indexed before

    status = index_status(parse_book(book), index_dir, embedder)
    assert not status["fresh"] and status["reason"] == INTERRUPTED
    settings = load_settings(env={}, book_dir=book, index_dir=index_dir, llm="extractive")
    store = open_store(index_dir)
    try:
        with pytest.raises(BookIndexError, match="was being written when its ingest stopped"):
            open_index("mini-book", index_dir, embedder, store)
        index, summary = load_index(settings)  # what the app, `rag ask` and `rag serve` do
        assert summary is not None and not summary.rebuilt
        # only the chunks whose stored vectors were of the discarded edit are embedded again
        assert 1 <= summary.embedded < summary.chunks
        assert index_status(parse_book(book), index_dir, embedder)["fresh"]
        assert_same_index(index, clean[2], settings)
    finally:
        store.close()


def test_a_killed_first_ingest_resumes_with_what_it_had_written(clean, tmp_path,
                                                                embedder) -> None:
    book = tmp_path / "mini-book"
    shutil.copytree(clean[0], book)
    index_dir = tmp_path / "index"
    kill_ingest_at("sentences", book, index_dir, tmp_path)  # every chunk written, some units

    name = collection_name("mini-book", embedder)
    store = open_store(index_dir)
    try:
        assert len(store.stored_hashes(name)) == 38
        counting = CountingEmbedder(embedder)
        summary = sync_index(book, index_dir, counting, store)
        assert summary.embedded == 0 and not summary.rebuilt
        table = open_index("mini-book", index_dir, embedder, store).sentences
        units = len(set(table.texts) | set(table.ask_vectors))
        assert 0 < counting.embedded < units  # the first batch of units was not embedded again
        assert not (collection_dir(index_dir, name) / "sentence_vectors.log").exists()
    finally:
        store.close()
