"""BM25 in Qdrant's sparse vectors (rag/index/sparse.py): hand-computed values, the backend
choice, an incremental re-ingest kept in step with the bm25s files, and Qdrant failing.

Real local Qdrant (which applies the IDF modifier as the server does:
qdrant_client/local/local_collection.py `_rescore_idf`) and the real MiniLM on one module of
the sample book. Both backends read the same index folder here, because the bm25s files are
written in both modes; tests/index/test_sparse_congruence.py compares two separate builds.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from rag.book.parse import parse_book
from rag.errors import ConfigError
from rag.index.build import collection_dir, collection_name, index_status, open_index, sync_index
from rag.index.lexical import (
    BM25S,
    QDRANT,
    LexicalIndex,
    book_vocabulary,
    lexical_backend,
    tokenize,
)
from rag.index.sparse import SparseLexical, document_vectors, robertson_idf, term_id

# Raw BM25 of a chunk within this share of the question's best score; coverage within this.
RAW_TOLERANCE = 1e-5
COVERAGE_TOLERANCE = 1e-6
QUESTIONS = ("Why does a humanoid's heading estimate drift?", "lidar point cloud range",
             "what is the?", "encoder encoder backlash after the gearbox", "zyzzyva quokka")


def test_document_values_are_bm25s_term_saturation() -> None:
    # tokens: [gait, gait, cycl] and [arm, torqu]; avgdl 2.5; k1 1.5, b 0.75
    built = document_vectors(["gait gait cycle", "arm torque"])
    assert tokenize("gait gait cycle") == ["gait", "gait", "cycl"]
    norm = 1.5 * (0.25 + 0.75 * 3 / 2.5)  # 1.725
    first = dict(zip(*built.vectors[0], strict=True))
    assert first[term_id("gait")] == pytest.approx(2 / (2 + norm))  # 0.536913
    assert first[term_id("cycl")] == pytest.approx(1 / (1 + norm))  # 0.366972
    second = dict(zip(*built.vectors[1], strict=True))
    assert second[term_id("arm")] == pytest.approx(1 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2.5)))
    assert built.avgdl == 2.5 and built.collisions == 0
    assert built.vectors[0][0] == sorted(built.vectors[0][0])  # Qdrant wants sorted indices


@pytest.mark.parametrize(("df", "n", "expected"), [
    (2, 10, math.log(8.5 / 2.5)),  # Robertson: ln((N - df + 0.5) / (df + 0.5))
    (1, 500, math.log(499.5 / 1.5)),
    (7, 10, 0.0),  # more than half the chunks: bm25s floors Robertson's IDF at 0
])
def test_robertson_idf_is_recovered_from_qdrant_idf(df: int, n: int, expected: float) -> None:
    qdrant_idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    assert robertson_idf(qdrant_idf) == pytest.approx(expected, abs=1e-12)


def test_lexical_backend_follows_rag_lexical_then_the_server(monkeypatch) -> None:
    monkeypatch.delenv("RAG_LEXICAL", raising=False)
    assert lexical_backend("") == BM25S
    assert lexical_backend("http://qdrant:6333") == QDRANT
    monkeypatch.setenv("RAG_LEXICAL", "BM25s")
    assert lexical_backend("http://qdrant:6333") == BM25S
    monkeypatch.setenv("RAG_LEXICAL", "qdrant")
    assert lexical_backend("") == QDRANT
    monkeypatch.setenv("RAG_LEXICAL", "elastic")
    with pytest.raises(ConfigError, match="RAG_LEXICAL must be one of qdrant, bm25s"):
        lexical_backend("")


def both_backends(book: Path, index_dir: Path, embedder, store) -> tuple:
    index = open_index(parse_book(book).book_id, index_dir, embedder, store)
    files = LexicalIndex.load(collection_dir(index_dir, index.collection) / "bm25",
                              len(index.chunks))
    return index, files


def assert_same_bm25(sparse, files: LexicalIndex, question: str) -> None:
    ours, theirs = sparse.match(question, 20), files.match(question, 20)
    assert ours.order == theirs.order, question
    assert ours.best == pytest.approx(theirs.best, rel=RAW_TOLERANCE)
    everything = list(range(files.size))  # the top chunks and every other one, read on request
    scale = max(theirs.best, 1.0)
    assert np.abs(ours.raw(everything) - theirs.raw(everything)).max() <= RAW_TOLERANCE * scale
    assert np.abs(ours.coverage(everything) - theirs.coverage(everything)).max() \
        <= COVERAGE_TOLERANCE


def test_incremental_ingest_keeps_sparse_vectors_and_bm25s_in_step(
        book, index_dir, store, embedder, monkeypatch) -> None:
    monkeypatch.setenv("RAG_LEXICAL", "qdrant")
    first = sync_index(book, index_dir, embedder, store)
    index, files = both_backends(book, index_dir, embedder, store)
    assert isinstance(index.lexical, SparseLexical) and index.lexical.size == first.chunks
    assert index.manifest["sparse"]["term_collisions"] == 0
    for question in QUESTIONS:
        assert_same_bm25(index.lexical, files, question)

    chapter = next(p for p in sorted((book / "sensing").glob("*.md"))
                   if "## " in p.read_text())
    text = chapter.read_text()
    head, _, rest = text.partition("\n## ")
    chapter.write_text(head + "\n## Quokka sensors {#quokka}\n\nA zyzzyva quokka sensor "
                       "counts quokka steps.\n\n## " + rest.split("\n## ", 1)[-1])
    second = sync_index(book, index_dir, embedder, store)
    assert not second.rebuilt and second.embedded < second.chunks and second.removed > 0
    index, files = both_backends(book, index_dir, embedder, store)
    assert index.lexical.size == second.chunks == store.count(index.collection)
    for question in QUESTIONS:
        assert_same_bm25(index.lexical, files, question)
    quokka = index.lexical.match("quokka", 5)
    assert [index.chunks[p].section_id for p in quokka.order] == ["quokka"]


def test_switching_backends_rebuilds_once_and_reads_files_until_then(
        book, index_dir, store, embedder, monkeypatch, caplog) -> None:
    monkeypatch.setenv("RAG_LEXICAL", "bm25s")
    sync_index(book, index_dir, embedder, store)
    monkeypatch.setenv("RAG_LEXICAL", "qdrant")
    parsed = parse_book(book)
    status = index_status(parsed, index_dir, embedder, QDRANT)
    assert not status["fresh"] and "sparse vectors" in status["reason"]
    assert index_status(parsed, index_dir, embedder, BM25S)["fresh"]
    before = open_index(parsed.book_id, index_dir, embedder, store)  # not rebuilt yet
    assert isinstance(before.lexical, LexicalIndex) and "no current sparse vectors" in caplog.text
    summary = sync_index(book, index_dir, embedder, store)
    assert summary.rebuilt  # the collection is re-created with its sparse vector
    assert index_status(parsed, index_dir, embedder, QDRANT)["fresh"]
    index, files = both_backends(book, index_dir, embedder, store)
    assert isinstance(index.lexical, SparseLexical)
    assert_same_bm25(index.lexical, files, QUESTIONS[0])
    monkeypatch.setenv("RAG_LEXICAL", "bm25s")  # back: the files are there, nothing to rebuild
    assert index_status(parsed, index_dir, embedder, BM25S)["fresh"]
    assert isinstance(open_index(parsed.book_id, index_dir, embedder, store).lexical,
                      LexicalIndex)


def test_qdrant_failing_falls_back_to_the_bm25s_files(
        book, index_dir, store, embedder, monkeypatch, caplog) -> None:
    monkeypatch.setenv("RAG_LEXICAL", "qdrant")
    sync_index(book, index_dir, embedder, store)
    index, files = both_backends(book, index_dir, embedder, store)
    store.close()  # every later Qdrant call fails, as with a server that went away
    matches = index.lexical.match(QUESTIONS[0], 20)
    assert "BM25 from the BM25 files" in caplog.text
    expected = files.match(QUESTIONS[0], 20)
    assert matches.order == expected.order and matches.best == expected.best


def test_collection_holds_a_sparse_vector_per_chunk_with_the_idf_modifier(
        book, index_dir, store, embedder, monkeypatch) -> None:
    from qdrant_client import models

    monkeypatch.setenv("RAG_LEXICAL", "qdrant")
    summary = sync_index(book, index_dir, embedder, store)
    name = collection_name(parse_book(book).book_id, embedder)
    info = store.call("read a collection", "get_collection", name)
    assert info.config.params.sparse_vectors["bm25"].modifier == models.Modifier.IDF
    records, _ = store.call("read points", "scroll", name, limit=1000, with_vectors=True)
    assert len(records) == summary.chunks
    assert all(len(r.vector["bm25"].indices) > 0 and len(r.vector[""]) == embedder.dim
               for r in records)


def test_the_books_vocabulary_is_the_same_from_either_backend(
        book, index_dir, store, embedder, monkeypatch) -> None:
    """bm25s keeps the words it indexed and is asked for them; the sparse backend keeps none,
    so the chunks are tokenized again (rag.index.lexical.book_vocabulary): the same words."""
    monkeypatch.setenv("RAG_LEXICAL", "qdrant")
    sync_index(book, index_dir, embedder, store)
    index, files = both_backends(book, index_dir, embedder, store)
    assert isinstance(index.lexical, SparseLexical)
    from_files = book_vocabulary(dataclasses.replace(index, lexical=files, derived={}))
    assert book_vocabulary(index) == from_files and len(from_files) > 100
    assert "" not in from_files  # bm25s's padding word is no word of the book
