"""A per-request embedder wrapper that embeds each distinct query text once, and asks a failed
embedder nothing more: when it failed for retrieval, the answer stage gets the same error at
once instead of waiting on a dead service a second time."""

from __future__ import annotations

import numpy as np

from rag.errors import RagError
from rag.providers.base import Embedder


class QueryMemo(Embedder):
    """One request's view of an embedder: each distinct query text is embedded once."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.name, self.model_id, self.dim = embedder.name, embedder.model_id, embedder.dim
        self.max_tokens, self.batch_size = embedder.max_tokens, embedder.batch_size
        self._queries: dict[tuple[str, str], np.ndarray] = {}
        self._failure: RagError | None = None

    @property
    def notices(self) -> tuple:
        return getattr(self.embedder, "notices", ())

    def count_tokens(self, text: str) -> int:
        return self.embedder.count_tokens(text)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return self.embedder.count_tokens_batch(texts)

    def _embed_batch(self, texts: list[str], input_type: str) -> np.ndarray:
        return self.embedder._embed_batch(texts, input_type)

    def embed_documents(self, texts: list[str], progress=None) -> np.ndarray:
        return self.embedder.embed_documents(texts, progress)

    def embed_query(self, text: str) -> np.ndarray:
        if self.query_is_exact():  # retrieval's vector is the answerer's: embed once
            return self.embed_query_exact(text)
        return self._memo(text, "", self.embedder.embed_query)

    def query_is_exact(self) -> bool:
        exact = getattr(self.embedder, "query_is_exact", None)  # a duck-typed embedder: no
        return bool(exact and exact())

    def embed_query_exact(self, text: str) -> np.ndarray:
        return self._memo(text, "exact", self.embedder.embed_query_exact)

    def _memo(self, text: str, kind: str, embed) -> np.ndarray:
        key = (kind, text)
        if key not in self._queries:
            if self._failure is not None:
                raise self._failure
            try:
                self._queries[key] = embed(text)
            except RagError as e:
                self._failure = e
                raise
        return self._queries[key]
