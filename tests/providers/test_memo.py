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
