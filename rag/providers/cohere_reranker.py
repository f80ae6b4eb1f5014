"""Cohere's rerank endpoint (v2) through the `cohere` SDK: one relevance score in [0, 1] per text.

Called inside the question's retrieval budget; any failure raises ProviderError, and the
re-ranking stage keeps the hybrid order with a notice (rag.retrieval.rerank).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from rag.errors import ProviderError
from rag.providers.cohere_client import CohereCaller

DEFAULT_RERANK_MODEL = "rerank-v3.5"
MAX_TOKENS_PER_DOC = 1024  # a chunk is at most a few hundred tokens; a bound on what is sent
MISSING_KEY = ("Cohere re-ranking needs COHERE_API_KEY: set it in the environment or "
               ".streamlit/secrets.toml, or set [retrieval] rerank = \"offline\" or \"off\".")


class CohereReranker(CohereCaller):
    name = "cohere"
    what = "rerank"
    instead = "set [retrieval] rerank = \"offline\" or \"off\""

    def __init__(self, model: str = DEFAULT_RERANK_MODEL, api_key: str | None = None,
                 base_url: str | None = None, timeout: float = 10.0, max_retries: int = 1,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._configure(model, api_key, base_url, timeout, max_retries, sleep, MISSING_KEY)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """Relevance of each text to the query, in the texts' order."""
        if not texts:
            return []
        client = self.client()
        response = self._with_retries(lambda timeout: client.rerank(
            model=self.model_id, query=query, documents=list(texts),
            max_tokens_per_doc=MAX_TOKENS_PER_DOC,
            request_options={"timeout": timeout, "max_retries": 0}))
        scores: list[float | None] = [None] * len(texts)
        for item in getattr(response, "results", None) or []:
            index, value = getattr(item, "index", None), getattr(item, "relevance_score", None)
            if isinstance(index, int) and 0 <= index < len(texts) and \
                    isinstance(value, (int, float)):
                scores[index] = min(max(float(value), 0.0), 1.0)
        if any(s is None for s in scores):
            missing = sum(s is None for s in scores)
            raise ProviderError(f"Cohere's rerank response left out {missing} of {len(texts)} "
                                f"texts; the hybrid order is kept.")
        return [float(s) for s in scores]

    def score_hits(self, pool: Any, hits: Sequence[Any]) -> list[float]:
        """The re-ranking stage's interface: each hit's heading path and text, scored."""
        return self.score(pool.query, [" > ".join(h.chunk.heading_path) + "\n" + h.chunk.text
                                       for h in hits])
