"""The two provider interfaces: embedders and LLMs. Batching lives here, backends stay small."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np


class Embedder(ABC):
    """Turns text into unit-length float32 vectors."""

    name: str = ""
    model_id: str = ""
    max_tokens: int = 256
    dim: int = 0
    batch_size: int = 64

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Tokens in the embedder's own tokenizer, special tokens excluded."""

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return [self.count_tokens(t) for t in texts]

    @abstractmethod
    def _embed_batch(self, texts: list[str], input_type: str) -> np.ndarray:
        """Embed one batch; input_type is "document" or "query"."""

    def embed_documents(self, texts: list[str], progress=None) -> np.ndarray:
        out = []
        for start in range(0, len(texts), self.batch_size):
            out.append(self._embed_batch(texts[start:start + self.batch_size], "document"))
            if progress is not None:
                progress(min(start + self.batch_size, len(texts)), len(texts))
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        return normalize(np.vstack(out))

    def embed_query(self, text: str) -> np.ndarray:
        return normalize(self._embed_batch([text], "query"))[0]


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


@dataclass(frozen=True)
class Message:
    role: str  # "user" | "assistant"
    content: str


class LLM(ABC):
    """A chat model. The system prompt and the messages are kept apart on purpose."""

    name: str = ""
    model: str = ""

    @abstractmethod
    def generate(self, system: str, messages: list[Message], max_tokens: int,
                 temperature: float, timeout: float) -> str:
        """The whole reply text."""

    @abstractmethod
    def stream(self, system: str, messages: list[Message], max_tokens: int,
               temperature: float, timeout: float) -> Iterator[str]:
        """Text deltas as they arrive."""
