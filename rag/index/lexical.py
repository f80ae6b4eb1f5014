"""Lexical index: Snowball-stemmed tokens without stop words, scored by bm25s (Robertson BM25)."""

from __future__ import annotations

import re
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from rag.errors import BookIndexError

TOKEN_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
K1, B = 1.5, 0.75
PROBE = "Robots' joints were balancing, and the IMUs weren't drifting during the 2nd test."


def lexical_signature() -> dict:
    """What the BM25 index depends on; a probe sentence catches tokenizer or stemmer changes."""
    return {"method": "robertson", "k1": K1, "b": B, "probe": tokenize(PROBE)}


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN_PLUS

    return frozenset(STOPWORDS_EN_PLUS)


_STEMMER_LOCAL = threading.local()  # PyStemmer objects are not thread-safe


def _stemmer():
    stemmer = getattr(_STEMMER_LOCAL, "stemmer", None)
    if stemmer is None:
        import Stemmer

        stemmer = _STEMMER_LOCAL.stemmer = Stemmer.Stemmer("english")
    return stemmer


def tokenize(text: str, stem: bool = True, stop_words: bool = True) -> list[str]:
    """Lower-case word tokens, stop words removed, Snowball-stemmed."""
    words = [w.replace("’", "'").split("'")[0] for w in TOKEN_RE.findall(text.lower())]
    if stop_words:
        stops = _stop_words()
        words = [w for w in words if w not in stops]
    return _stemmer().stemWords(words) if stem else words


class LexicalIndex:
    """bm25s over pre-tokenised chunks; scores for the whole book in one call."""

    def __init__(self, retriever, size: int) -> None:
        self._retriever = retriever
        self._vocab = retriever.vocab_dict
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> LexicalIndex:
        import bm25s

        retriever = bm25s.BM25(method="robertson", k1=K1, b=B)
        corpus = [tokenize(t) for t in texts]
        retriever.index(corpus, show_progress=False)
        return cls(retriever, len(texts))

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._retriever.save(str(directory), show_progress=False)

    @classmethod
    def load(cls, directory: Path, size: int) -> LexicalIndex:
        import bm25s

        try:
            retriever = bm25s.BM25.load(str(directory), show_progress=False)
        except (OSError, ValueError) as e:
            raise BookIndexError(f"The BM25 index in {directory} is unreadable ({e}); "
                              "rebuild it with `python -m rag ingest --rebuild`.") from e
        return cls(retriever, size)

    def scores(self, query: str) -> np.ndarray:
        """Raw BM25 score of every chunk for this query (zeros when no term is known)."""
        tokens = [t for t in tokenize(query) if t in self._vocab]
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(tokens), dtype=np.float32)[: self.size]
