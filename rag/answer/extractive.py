"""Stage 3, offline: an answer made of the book's own sentences, each cited (nothing invented)."""

from __future__ import annotations

import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

from rag.book.chunk import split_units
from rag.index.lexical import tokenize
from rag.providers.base import Embedder
from rag.types import Draft, Hit

LIST_MARK_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
# A Markdown table (its |---| row included), also when chunking flattened its rows into one line.
TABLE_RE = re.compile(r"\|(?:[^|\n]*\|)*?\s*:?-{3,}:?\s*\|(?:[^|\n]*\|)*")
EXTRACTIVE = "extractive"
PREFILTER = 10  # sentences embedded per question: ~10 ms each on one core
KEEP_RELATIVE = 0.75  # a sentence far below the best one adds noise, not support


class SentenceVectors:
    """Vectors of book sentences for extractive answers, each embedded once per embedder: a book's
    sentences recur across questions, and embedding them is most of an extractive answer's time.

    Each sentence is embedded on its own, so its vector never depends on the batch it came in
    with, and answers stay identical whichever question embedded a sentence first."""

    def __init__(self, embedder: Embedder, size: int = 8192) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, sentences: list[str]) -> np.ndarray:
        with self._lock:
            found = {s: self._vectors[s] for s in sentences if s in self._vectors}
        for sentence in dict.fromkeys(s for s in sentences if s not in found):
            found[sentence] = self.embedder.embed_documents([sentence])[0]
        with self._lock:
            for sentence, vector in found.items():
                self._vectors[sentence] = vector
                self._vectors.move_to_end(sentence)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        if not sentences:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.vstack([found[s] for s in sentences])


_SHARED: weakref.WeakKeyDictionary[Embedder, SentenceVectors] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def sentence_vectors_for(embedder: Embedder) -> SentenceVectors:
    """One cache per embedder object, shared by every pipeline built on it."""
    with _SHARED_LOCK:
        if embedder not in _SHARED:
            _SHARED[embedder] = SentenceVectors(embedder)
        return _SHARED[embedder]


def clean_sentence(text: str) -> str:
    text = LIST_MARK_RE.sub("", text.strip())
    return re.sub(r"\*\*|__", "", text)


def _candidate_sentences(hits: Sequence[Hit], siblings: Sequence[Hit] = ()
                         ) -> list[tuple[int, int, str]]:
    """(marker number, position, sentence) from each hit and from the other passing chunks of
    its section, which retrieval set aside as duplicates but which cite the same section."""
    marker_of = {h.chunk.section_key: i for i, h in enumerate(hits, start=1)}
    sources = [(i, h.chunk.text) for i, h in enumerate(hits, start=1)]
    sources += [(marker_of[h.chunk.section_key], h.chunk.text) for h in siblings
                if h.passed and h.reason == "duplicate_section"
                and h.chunk.section_key in marker_of]
    out, seen = [], set()
    for n, (i, text) in enumerate(sources):
        text = TABLE_RE.sub("\n\n", text)  # a table is no sentence, and must not glue two
        for position, (unit, is_code) in enumerate(split_units(text), start=n * 1000):
            sentence = clean_sentence(unit)
            if is_code or sentence.startswith("|") or len(sentence.split()) < 5:
                continue
            if sentence.endswith(":") or sentence in seen:  # lead-ins and overlap repeats
                continue
            seen.add(sentence)
            out.append((i, position, sentence))
    return out


def _prefilter(candidates: list[tuple[int, int, str]], terms: set[str], hits: Sequence[Hit]
               ) -> list[tuple[int, int, str]]:
    """The few sentences worth embedding: most shared terms, then the better excerpt."""
    def cheap(item: tuple[int, int, str]) -> tuple[float, int, int]:
        i, position, sentence = item
        return (-len(terms & set(tokenize(sentence))) - hits[i - 1].blended, i, position)

    return sorted(sorted(candidates, key=cheap)[:PREFILTER], key=lambda c: (c[0], c[1]))


def extractive_draft(question: str, hits: Sequence[Hit], max_sentences: int = 3,
                     embed: Callable[[list[str]], np.ndarray] | None = None,
                     query_vector: np.ndarray | None = None, siblings: Sequence[Hit] = ()
                     ) -> Draft:
    """The book's own sentences that best match the question, each with its marker; deterministic.

    A sentence's score mixes its cosine with the question (when an embedder is given), the share
    of question terms it contains, and its excerpt's retrieval score."""
    terms = set(tokenize(question))
    candidates = _prefilter(_candidate_sentences(hits, siblings), terms, hits)
    semantic = np.zeros(len(candidates), dtype=np.float32)
    if embed is not None and query_vector is not None and candidates:
        semantic = embed([s for _, _, s in candidates]) @ query_vector
    scored = []
    for (i, position, sentence), cosine in zip(candidates, semantic, strict=True):
        words = tokenize(sentence)
        lexical = len(terms & set(words)) / max(len(terms), 1)
        if not lexical and cosine < 0.3:
            continue
        score = 0.6 * float(cosine) + 0.3 * lexical + 0.1 * hits[i - 1].blended
        scored.append((round(score, 6), -i, -position, i, sentence))
    if not scored:  # the excerpts passed the threshold but share no words: lead with the best one
        scored = [(0.0, -i, -p, i, s) for i, p, s in candidates[:2]]
    ranked = sorted(scored, reverse=True)
    chosen = [s for s in ranked[:max_sentences] if s[0] >= ranked[0][0] * KEEP_RELATIVE]
    seen: set[str] = set()
    parts, quotes, markers = [], [], []
    for _, _, _, i, sentence in sorted(chosen, key=lambda s: (-s[1], -s[2])):
        if sentence.lower() in seen:
            continue
        seen.add(sentence.lower())
        parts.append(f"{sentence} [S{i}]")
        quotes.append(sentence)
        markers.append(f"S{i}")
    text = " ".join(parts)
    return Draft(text=text, markers=tuple(dict.fromkeys(markers)), generation_confidence=None,
                 provider=EXTRACTIVE, model=EXTRACTIVE, prompt="", raw_response=text,
                 quotes=tuple(quotes))
