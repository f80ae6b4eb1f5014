"""BM25 inside Qdrant: a named sparse vector per chunk, weighted by Qdrant's IDF modifier.

Term ids are a stable 32-bit hash (blake2b) of the stemmed term, so any process turns a question
into ids without a vocabulary and an incremental ingest gives a new word an id on its own.
Distinct terms that share an id are counted at build and recorded in the manifest (expected
V^2 / 2^33 pairs for V distinct terms: none on the sample book, about 0.2 at SciFact's 30,000).

The scores are bm25s's Robertson BM25 (lexical.py), not an approximation. A chunk's value for a
term is bm25s's saturation tf / (tf + k1 (1 - b + b dl / avgdl)). Qdrant multiplies query
weights by its IDF L = ln(1 + (N - df + 0.5) / (df + 0.5)), but bm25s uses Robertson's
ln(max(1, (N - df + 0.5) / (df + 0.5))) = ln(max(1, e^L - 1)). So one single-term query per
question term (one batched request) reads L back as score / value, and the question's query
weights each term by count x ln(max(1, e^L - 1)) / L: Qdrant's scores are then bm25s's (a
repeated question term counts twice, as in bm25s). L is also exactly term coverage's IDF,
ln((N + 1) / (df + 0.5)).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rag.errors import BookIndexError
from rag.index.lexical import K1, QDRANT, B, LexicalIndex, LexicalMatches, tokenize
from rag.index.vectors import SPARSE, UPSERT_BATCH, VectorStore

SPARSE_SIGNATURE = {"version": 1, "term_ids": "blake2b-32 of the stemmed term",
                    "values": "bm25s robertson tf saturation", "k1": K1, "b": B}
TIE_MARGIN = 16  # extra chunks asked for, so chunks tied at the cut are kept in book order
LOG = logging.getLogger(__name__)


def sparse_current(manifest: dict) -> bool:
    """Whether the collection's sparse vectors were written by this code for this index."""
    sparse = manifest.get("sparse")
    return isinstance(sparse, dict) and all(sparse.get(k) == v
                                            for k, v in SPARSE_SIGNATURE.items())


def term_id(term: str) -> int:
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "little")


@dataclass(frozen=True)
class SparseBuild:
    vectors: list[tuple[list[int], list[float]]]  # (sorted term ids, values) per text
    avgdl: float
    collisions: int  # ids shared by distinct terms (their values add up)


def document_vectors(texts: list[str]) -> SparseBuild:
    """bm25s's term saturation per chunk, over the same tokens, k1, b and average length."""
    corpus = [tokenize(t) for t in texts]
    avgdl = float(np.mean([len(doc) for doc in corpus])) if corpus else 0.0
    owners: dict[int, str] = {}
    collided: set[int] = set()
    vectors = []
    for doc in corpus:
        norm = K1 * (1 - B + B * len(doc) / avgdl) if avgdl else K1
        values: dict[int, float] = {}
        for term, tf in Counter(doc).items():
            tid = term_id(term)
            if owners.setdefault(tid, term) != term:
                collided.add(tid)
            values[tid] = values.get(tid, 0.0) + tf / (tf + norm)
        ids = sorted(values)
        vectors.append((ids, [values[i] for i in ids]))
    return SparseBuild(vectors, avgdl, len(collided))


def sync_sparse(store: VectorStore, collection: str, chunk_ids: list[str], texts: list[str]
                ) -> dict:
    """Write every chunk's sparse vector (a value depends on the book's average length, which
    any change moves); returns the manifest's "sparse" entry."""
    from qdrant_client import models

    built = document_vectors(texts)
    for start in range(0, len(chunk_ids), UPSERT_BATCH):
        end = start + UPSERT_BATCH
        points = [models.PointVectors(id=cid, vector={SPARSE: models.SparseVector(
            indices=ids, values=values)}) for cid, (ids, values) in
            zip(chunk_ids[start:end], built.vectors[start:end], strict=True)]
        store.call("store sparse vectors", "update_vectors", collection, points=points,
                   wait=True)
    if built.collisions:
        LOG.warning("%d term ids of %s are shared by different words; their BM25 values add up",
                    built.collisions, collection)
    return {**SPARSE_SIGNATURE, "avgdl": round(built.avgdl, 6),
            "term_collisions": built.collisions}


def open_lexical(store: VectorStore, collection: str, chunk_ids: list[str], bm25_dir: Path,
                 manifest: dict) -> LexicalIndex | SparseLexical:
    """Qdrant's sparse vectors when the store is set to them and they are current, else the
    bm25s files (always written: they are also the fallback when Qdrant fails)."""
    if store.lexical == QDRANT:
        if sparse_current(manifest):
            return SparseLexical(store, collection, chunk_ids, bm25_dir)
        LOG.warning("%s has no current sparse vectors; using the BM25 files until the next "
                    "ingest writes them", collection)
    return LexicalIndex.load(bm25_dir, len(chunk_ids))


def robertson_idf(lucene_idf: float) -> float:
    """bm25s's Robertson IDF from Qdrant's (Lucene's) IDF for the same df and N."""
    return math.log(max(1.0, math.expm1(lucene_idf)))


class SparseLexical:
    """A question's BM25 from the collection's sparse vectors: nothing of the index is loaded
    (the chunk ids are, for positions); the bm25s files are read only if Qdrant fails."""

    def __init__(self, store: VectorStore, collection: str, chunk_ids: list[str],
                 bm25_dir: Path) -> None:
        self.store, self.collection, self.chunk_ids = store, collection, chunk_ids
        self.positions = {cid: i for i, cid in enumerate(chunk_ids)}
        self.size = len(chunk_ids)
        self._bm25_dir = bm25_dir
        self._fallback: LexicalIndex | None = None
        self._lock = threading.Lock()

    def match(self, query: str, limit: int) -> LexicalMatches:
        counts = Counter(term_id(t) for t in tokenize(query))
        try:
            idf = self._idf(sorted(counts))
            weights = {t: counts[t] * robertson_idf(idf[t]) for t in sorted(idf)}
            weights = {t: w for t, w in weights.items() if w > 0}
            matches = SparseMatches(self, weights, self._coverage_idf(counts, idf))
            if weights:
                self._search(matches, {t: w / idf[t] for t, w in weights.items()}, limit)
            return matches
        except BookIndexError as e:
            LOG.warning("BM25 from the BM25 files: %s", e)
            return self._fallback_index().match(query, limit)

    def _coverage_idf(self, counts: Counter, idf: dict[int, float]) -> dict[int, float]:
        """Each distinct question term's IDF; a term found nowhere has df 0."""
        unknown = math.log((self.size + 1) / 0.5)
        return {t: idf.get(t, unknown) for t in counts}

    def _idf(self, ids: list[int]) -> dict[int, float]:
        """Qdrant's IDF of each term found in the collection: score / value of its best chunk."""
        from qdrant_client import models

        if not ids:
            return {}
        requests = [models.QueryRequest(query=models.SparseVector(indices=[t], values=[1.0]),
                                        using=SPARSE, limit=1, with_vector=[SPARSE],
                                        with_payload=False) for t in ids]
        answers = self.store.call("search sparse vectors", "query_batch_points",
                                  self.collection, requests=requests)
        idf = {}
        for t, answer in zip(ids, answers, strict=True):
            for point in answer.points[:1]:
                value = term_values(point.vector, {t}).get(t, 0.0)
                if value > 0 and point.score > 0:
                    idf[t] = point.score / value
        return idf

    def _search(self, matches: SparseMatches, weights: dict[int, float], limit: int) -> None:
        """The best chunks for query weights that Qdrant's IDF turns into matches.weights."""
        from qdrant_client import models

        ids = sorted(weights)
        query = models.SparseVector(indices=ids, values=[weights[t] for t in ids])
        answer = self.store.call("search sparse vectors", "query_points", self.collection,
                                 query=query, using=SPARSE, limit=limit + TIE_MARGIN,
                                 with_payload=False, with_vectors=[SPARSE])
        found = sorted(((self.positions[str(p.id)], float(p.score), p.vector)
                        for p in answer.points if p.score > 0 and str(p.id) in self.positions),
                       key=lambda row: (-row[1], row[0]))  # ties in book order, as bm25s
        for position, score, vector in found:
            matches.scores[position] = score
            matches.values[position] = term_values(vector, matches.coverage_idf)
        matches.order = [position for position, _, _ in found[:limit]]
        matches.best = found[0][1] if found else 0.0

    def fetch_values(self, positions: list[int], terms: dict[int, float]
                     ) -> dict[int, dict[int, float]]:
        records = self.store.call("read sparse vectors", "retrieve", self.collection,
                                  ids=[self.chunk_ids[p] for p in positions],
                                  with_payload=False, with_vectors=[SPARSE])
        return {self.positions[str(r.id)]: term_values(r.vector, terms) for r in records
                if str(r.id) in self.positions}

    def _fallback_index(self) -> LexicalIndex:
        with self._lock:
            if self._fallback is None:
                self._fallback = LexicalIndex.load(self._bm25_dir, self.size)
            return self._fallback


def term_values(vector, terms) -> dict[int, float]:
    """{term id: value} of a record's sparse vector, for the ids in `terms` only."""
    sparse = vector.get(SPARSE) if isinstance(vector, dict) else None
    if sparse is None:
        return {}
    pairs = zip(sparse.indices, sparse.values, strict=True)
    return {int(i): float(v) for i, v in pairs if int(i) in terms}


@dataclass
class SparseMatches:
    """One question against the sparse vectors: the best chunks come with their vectors; other
    chunks asked about (found by the dense side) are read in one request, once."""

    lexical: SparseLexical
    weights: dict[int, float]  # term id -> count x Robertson IDF: BM25 = sum of weight x value
    coverage_idf: dict[int, float]  # every distinct question term -> its IDF
    order: list[int] = field(default_factory=list)
    best: float = 0.0
    scores: dict[int, float] = field(default_factory=dict)  # Qdrant's, for the best chunks
    values: dict[int, dict[int, float]] = field(default_factory=dict)

    def _values_for(self, positions: Sequence[int]) -> list[dict[int, float]]:
        missing = [int(p) for p in dict.fromkeys(positions) if p not in self.values]
        if missing and self.coverage_idf:
            self.values.update(self.lexical.fetch_values(missing, self.coverage_idf))
        return [self.values.get(int(p), {}) for p in positions]

    def raw(self, positions: Sequence[int]) -> np.ndarray:
        values = self._values_for(positions) if self.weights else [{} for _ in positions]
        return np.array([self.scores[p] if p in self.scores else
                         sum(w * v.get(t, 0.0) for t, w in self.weights.items())
                         for p, v in zip(positions, values, strict=True)], dtype=np.float32)

    def coverage(self, positions: Sequence[int]) -> np.ndarray:
        total = sum(self.coverage_idf.values())
        if total <= 0:
            return np.zeros(len(positions), dtype=np.float32)
        held = [sum(idf for t, idf in self.coverage_idf.items() if t in v)
                for v in self._values_for(positions)]
        return np.clip(np.array(held, dtype=np.float32) / np.float32(total), 0.0, 1.0)
