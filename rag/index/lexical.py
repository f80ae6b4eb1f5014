"""Lexical index: Snowball-stemmed tokens without stop words, scored by bm25s (Robertson BM25)."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from rag.book.chunk import embed_text_for
from rag.errors import BookIndexError, ConfigError

TOKEN_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
K1, B = 1.5, 0.75
PROBE = "Robots' joints were balancing, and the IMUs weren't drifting during the 2nd test."
QDRANT, BM25S = "qdrant", "bm25s"  # where BM25 lives: Qdrant's sparse vectors (sparse.py), files
BACKENDS = (QDRANT, BM25S)


def lexical_backend(url: str = "") -> str:
    """RAG_LEXICAL when set, else "qdrant" with a Qdrant server and "bm25s" without one."""
    value = os.environ.get("RAG_LEXICAL", "").strip().lower()
    if not value:
        return QDRANT if url else BM25S
    if value not in BACKENDS:
        raise ConfigError(f"RAG_LEXICAL must be one of {', '.join(BACKENDS)}; got {value!r}. "
                          "Unset it to use Qdrant with QDRANT_URL and bm25s without.")
    return value


def lexical_signature() -> dict:
    """What the BM25 index depends on; a probe sentence catches tokenizer or stemmer changes."""
    return {"method": "robertson", "k1": K1, "b": B, "probe": tokenize(PROBE)}


@lru_cache(maxsize=1)
def english_stop_words() -> frozenset[str]:
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
        stops = english_stop_words()
        words = [w for w in words if w not in stops]
    return _stemmer().stemWords(words) if stem else words


EMPTY_MARKER = "empty.json"  # written instead of bm25s files when no chunk has a word
BM25_FILES = ("params.index.json", "vocab.index.json", "data.csc.index.npy",
              "indices.csc.index.npy", "indptr.csc.index.npy")


def lexical_files_present(directory: Path) -> bool:
    """Whether a saved index is complete enough to load (a cheap check for freshness)."""
    return (directory / EMPTY_MARKER).is_file() or all((directory / name).is_file()
                                                        for name in BM25_FILES)


class LexicalMatches(Protocol):
    """One question's BM25, as hybrid retrieval reads it, from either backend (bm25s files
    here, Qdrant's sparse vectors in sparse.py)."""

    order: list[int]  # positions of the best chunks by raw BM25, best first, all scoring > 0
    best: float  # the best raw BM25 score in the whole book for this question (0: no match)

    def raw(self, positions: Sequence[int]) -> np.ndarray:
        """Raw BM25 score of the chunks at these positions."""

    def coverage(self, positions: Sequence[int]) -> np.ndarray:
        """Term coverage (LexicalIndex.term_coverage) of the chunks at these positions."""


@dataclass(frozen=True)
class BookMatches:
    """bm25s scores every chunk of the book in one call; the positions asked for are read off."""

    scores: np.ndarray
    order: list[int]
    best: float
    whole_coverage: Callable[[], np.ndarray]

    def raw(self, positions: Sequence[int]) -> np.ndarray:
        return self.scores[np.asarray(positions, dtype=np.int64)].astype(np.float32)

    def coverage(self, positions: Sequence[int]) -> np.ndarray:
        rows = np.asarray(positions, dtype=np.int64)
        return self.whole_coverage()[rows].astype(np.float32)


class LexicalIndex:
    """bm25s over pre-tokenised chunks; scores for the whole book in one call.

    With no word in any chunk (a book of headings only) there is nothing for bm25s to index
    (it raises "max() arg is an empty sequence"): the index is empty and scores zeros.
    """

    def __init__(self, retriever, size: int) -> None:
        self._retriever = retriever
        self._vocab = retriever.vocab_dict if retriever is not None else {}
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> LexicalIndex:
        import bm25s

        corpus = [tokenize(t) for t in texts]
        if not any(corpus):
            return cls(None, len(texts))
        retriever = bm25s.BM25(method="robertson", k1=K1, b=B)
        retriever.index(corpus, show_progress=False)
        return cls(retriever, len(texts))

    def save(self, directory: Path) -> None:
        """Write beside `directory` and swap it in, so a killed ingest never leaves half of one."""
        staging = directory.with_name(directory.name + ".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        if self._retriever is None:
            (staging / EMPTY_MARKER).write_text(json.dumps({"size": self.size}))
        else:
            self._retriever.save(str(staging), show_progress=False)
        old = directory.with_name(directory.name + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if directory.exists():
            directory.replace(old)
        staging.replace(directory)
        shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, directory: Path, size: int) -> LexicalIndex:
        import bm25s

        if (directory / EMPTY_MARKER).is_file():
            return cls(None, size)
        try:
            retriever = bm25s.BM25.load(str(directory), show_progress=False)
        except (OSError, ValueError, KeyError) as e:
            raise BookIndexError(f"The BM25 index in {directory} is unreadable ({e}); "
                              "rebuild it with `python -m rag ingest --rebuild`.") from e
        return cls(retriever, size)

    def words(self) -> frozenset[str] | None:
        """The stems bm25s indexed (its "" is padding), or None for an index built on nothing."""
        return frozenset(self._vocab) - {""} if self._retriever is not None else None

    def scores(self, query: str) -> np.ndarray:
        """Raw BM25 score of every chunk for this query (zeros when no term is known)."""
        tokens = [t for t in tokenize(query) if t in self._vocab]
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._retriever.get_scores(tokens), dtype=np.float32)[: self.size]

    def match(self, query: str, limit: int) -> BookMatches:
        """The best `limit` chunks by BM25 (ties in book order) and every chunk's score."""
        scores = self.scores(query)
        return BookMatches(scores, top_positive(scores, limit),
                           float(scores.max()) if scores.size else 0.0,
                           lambda: self.term_coverage(query))

    def term_coverage(self, query: str) -> np.ndarray:
        """Per chunk, the IDF-weighted share of the question's distinct terms it holds (its
        heading path included, as BM25 sees it), in [0, 1]. A question term found nowhere in
        the book still counts in the whole, so a question the book barely covers scores low
        everywhere. IDF is log((N + 1) / (df + 0.5)), df read from bm25s's term-document matrix."""
        coverage = np.zeros(self.size, dtype=np.float32)
        terms = set(tokenize(query))
        if not terms or self._retriever is None:
            return coverage
        indptr, indices = self._retriever.scores["indptr"], self._retriever.scores["indices"]
        total = 0.0
        for term in terms:
            tid = self._vocab.get(term)
            start, end = (int(indptr[tid]), int(indptr[tid + 1])) if tid is not None else (0, 0)
            idf = float(np.log((self.size + 1) / (end - start + 0.5)))
            total += idf
            if end > start:
                coverage[indices[start:end]] += idf
        return np.clip(coverage / total, 0.0, 1.0)[: self.size] if total > 0 else coverage


def book_vocabulary(index) -> frozenset[str]:
    """Every stem of the book's text, code and headings included (a BookIndex's chunks), once per
    loaded index: which names a question may use that the book never mentions. bm25s indexed
    exactly these (its "" is padding); the Qdrant sparse backend keeps no words, so its chunks
    are tokenized again (44 ms for the Physical AI book)."""
    key = ("vocabulary", id(index.chunks))
    if key not in index.derived:
        words = index.lexical.words() if isinstance(index.lexical, LexicalIndex) else None
        index.derived[key] = words if words is not None else frozenset(
            stem for c in index.chunks if c.source == "book"
            for stem in tokenize(embed_text_for(c.heading_path, c.text)))
    return index.derived[key]


CASED_WORD_RE = re.compile(r"(?<![\w.-])([A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*)(?![\w-])")
SENTENCE_START_RE = re.compile(r"(?:^|[.!?:]\s+|\n\s*(?:[-*+#>|]\s*)*)$")


def book_casing(index, names: bool = False, share: float = 0.9, least: int = 2
                ) -> dict[str, str]:
    """How the book spells the words it writes with capitals inside them (lower case -> "URDF",
    "ROS", "RealSense", "Nav2"), or with `names` with any capital ("Jetson", "Gazebo"): those
    written so at least `share` of the `least`-or-more times they occur inside a sentence (a
    sentence's first word says nothing), once per loaded index. An all-lower-case question gets
    its acronyms back from the first (rag.answer.wording.with_casing): "what does urdf stand
    for" is then a question about an acronym; a name's capital changes nothing there. A
    misspelt name of a question is read as one of the second (rag.answer.spelling)."""
    key = ("casing", id(index.chunks))
    if key not in index.derived:
        seen: dict[str, dict[str, int]] = {}
        for c in index.chunks:
            if c.source != "book":
                continue
            for m in CASED_WORD_RE.finditer(c.text):
                if not SENTENCE_START_RE.search(c.text[max(0, m.start() - 12):m.start()]):
                    forms = seen.setdefault(m.group(1).lower(), {})
                    forms[m.group(1)] = forms.get(m.group(1), 0) + 1
        index.derived[key] = seen
    chosen = (*key, names, share, least)
    if chosen not in index.derived:
        spelt: dict[str, str] = {}
        for word, forms in index.derived[key].items():
            total = sum(forms.values())
            cased = {f: n for f, n in forms.items()
                     if any(ch.isupper() for ch in (f if names else f[1:]))}
            if len(word) > 1 and total >= least and sum(cased.values()) >= share * total:
                spelt[word] = max(cased, key=lambda f: (cased[f], f))
        index.derived[chosen] = spelt
    return index.derived[chosen]


WORD_RE = re.compile(r"[A-Za-z][a-z]+")


def book_words(index) -> dict[str, int]:
    """How often the book (text, code and headings) uses each word of two or more letters, lower
    case, once per loaded index: what a misspelt word of a question is corrected to
    (rag.answer.spelling)."""
    key = ("words", id(index.chunks))
    if key not in index.derived:
        counts: dict[str, int] = {}
        for c in index.chunks:
            if c.source == "book":
                for w in WORD_RE.findall(embed_text_for(c.heading_path, c.text)):
                    w = w.lower()
                    counts[w] = counts.get(w, 0) + 1
        index.derived[key] = counts
    return index.derived[key]


def top_positive(scores: np.ndarray, limit: int) -> list[int]:
    """Positions of the best `limit` positive scores, best first, ties in book order: what a
    stable argsort gives, without sorting the whole book (0.4 ms of 10,000 chunks per query)."""
    positive = np.flatnonzero(scores > 0)
    if limit <= 0 or not positive.size:
        return []
    if positive.size > limit:
        values = scores[positive]
        cut = np.partition(values, positive.size - limit)[positive.size - limit]
        positive = positive[values >= cut]  # the best `limit`, with every tie at the cut
    order = positive[np.lexsort((positive, -scores[positive]))]
    return [int(i) for i in order[:limit]]
