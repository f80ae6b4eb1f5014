"""The qdrant lexical backend against the bm25s backend on the sample book: two separate builds
(RAG_LEXICAL=bm25s and RAG_LEXICAL=qdrant), every labelled question of
data/eval/questions.yaml, the same candidate pool, the same top 10 and the same scores.

Tolerances (measured: 1.5e-7 relative on raw BM25, 1.2e-7 on coverage): raw BM25 within 1e-5
of the question's best score; the normalised BM25, term coverage and blended score within 1e-5.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import yaml

from rag.book.parse import parse_book
from rag.index.build import open_index, sync_sections
from rag.index.lexical import LexicalIndex
from rag.index.sparse import SparseLexical
from rag.index.vectors import open_store
from rag.retrieval.hybrid import collect_candidates, rank_candidates
from tests.builders import SAMPLE_BOOK, SAMPLE_QUESTIONS

TOLERANCE = 1e-5
TOP = 10
QUESTIONS = [q["question"] for q in yaml.safe_load(
    SAMPLE_QUESTIONS.read_text())["questions"]]


@pytest.fixture(scope="module")
def both_indexes(embedder, tmp_path_factory):
    """The sample book built twice, back to back with one embedder (so dense vectors are the
    same by construction): BM25 in bm25s files, and BM25 in Qdrant's sparse vectors. No
    sentence vectors: retrieval reads none."""
    book = parse_book(SAMPLE_BOOK)
    built, stores = {}, []
    for backend in ("bm25s", "qdrant"):
        index_dir = tmp_path_factory.mktemp(f"{backend}-index")
        with pytest.MonkeyPatch.context() as env:
            env.setenv("RAG_LEXICAL", backend)
            stores.append(open_store(index_dir))
            sync_sections(book.sections, book.book_id, book.content_hash, index_dir, embedder,
                          stores[-1], sentences=False)
            built[backend] = open_index(book.book_id, index_dir, embedder, stores[-1])
    assert isinstance(built["bm25s"].lexical, LexicalIndex)
    assert isinstance(built["qdrant"].lexical, SparseLexical)
    yield built["bm25s"], built["qdrant"]
    for store in stores:
        store.close()


def test_every_labelled_question_has_the_same_pool_top_10_and_scores(
        both_indexes, sample_settings) -> None:
    files_index, qdrant_index = both_indexes
    assert len(QUESTIONS) >= 100
    assert [c.chunk_id for c in qdrant_index.chunks] == [c.chunk_id for c in files_index.chunks]
    settings = dataclasses.replace(sample_settings.retrieval, top_k=TOP)
    for question in QUESTIONS:
        files = collect_candidates(files_index, question, settings.candidate_pool)
        sparse = collect_candidates(qdrant_index, question, settings.candidate_pool)
        ids = [c.chunk_id for c in files.chunks]
        assert [c.chunk_id for c in sparse.chunks] == ids, question
        assert sparse.bm25_max == pytest.approx(files.bm25_max, rel=TOLERANCE)
        scale = max(files.bm25_max, 1.0)
        assert np.abs(sparse.bm25_raw - files.bm25_raw).max(initial=0) <= TOLERANCE * scale
        for column in ("bm25", "dense"):
            assert np.abs(getattr(sparse, column) - getattr(files, column)).max(initial=0) \
                <= TOLERANCE, (question, column)
        assert np.abs(sparse.signal("terms") - files.signal("terms")).max(initial=0) <= TOLERANCE
        ours, theirs = rank_candidates(sparse, settings), rank_candidates(files, settings)
        assert [h.chunk.chunk_id for h in ours.hits] == [h.chunk.chunk_id for h in theirs.hits]
        top_ours = [(h.chunk.chunk_id, h.blended) for h in ours.candidates[:TOP]]
        top_theirs = [(h.chunk.chunk_id, h.blended) for h in theirs.candidates[:TOP]]
        assert [cid for cid, _ in top_ours] == [cid for cid, _ in top_theirs], question
        assert np.allclose([b for _, b in top_ours], [b for _, b in top_theirs], atol=TOLERANCE)
