"""One request's view of an embedder: each query embedded once, a failed embedder asked once."""

from __future__ import annotations

import numpy as np
import pytest

from rag.errors import ProviderError
from rag.providers.memo import QueryMemo
from tests.builders import CountingEmbedder


class Down(CountingEmbedder):
    def embed_query(self, text: str) -> np.ndarray:
        self.embedded += 1
        raise ProviderError("the embedder is down")


def test_each_query_is_embedded_once(embedder):
    counting = CountingEmbedder(embedder)
    memo = QueryMemo(counting)
    first = memo.embed_query("What is a ZMP?")
    assert np.array_equal(memo.embed_query("What is a ZMP?"), first)
    memo.embed_query("Another question?")
    assert counting.queries == 2


def test_a_failed_embedder_is_not_asked_again_in_the_request(embedder):
    down = Down(embedder)
    memo = QueryMemo(down)
    for text in ("What is a ZMP?", "What is a ZMP?", "A rewritten follow-up?"):
        with pytest.raises(ProviderError, match="down"):
            memo.embed_query(text)
    assert down.embedded == 1


class Approximate(CountingEmbedder):
    """Retrieval's questions through an approximate copy (as the int8 query model)."""

    def query_is_exact(self) -> bool:
        return False


def test_one_vector_serves_retrieval_and_the_answerer_when_they_are_the_same(embedder):
    counting = CountingEmbedder(embedder)
    memo = QueryMemo(counting)
    retrieval = memo.embed_query("What is a ZMP?")
    answerer = memo.embed_query_exact("What is a ZMP?")
    assert np.array_equal(retrieval, answerer) and counting.queries == 1


def test_an_approximate_retrieval_vector_is_kept_apart_from_the_exact_one(embedder):
    approximate = Approximate(embedder)
    memo = QueryMemo(approximate)
    for _ in range(2):
        memo.embed_query("What is a ZMP?")
        memo.embed_query_exact("What is a ZMP?")
    assert approximate.queries == 2 and not memo.query_is_exact()


def test_the_local_embedder_says_whether_its_questions_are_exact(embedder):
    from rag.providers.local_embedder import LocalEmbedder

    fp32 = LocalEmbedder(embedder.directory, "onnx", embedder.cache_dir, query_model="fp32")
    assert fp32.query_is_exact()
    int8 = LocalEmbedder(embedder.directory, "onnx", embedder.cache_dir, query_model="int8")
    assert int8.query_is_exact() == (int8.query_model_used == "fp32")
