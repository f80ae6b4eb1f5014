"""BEIR benchmark: a corpus indexed as a book of one-section chapters, scored per document.

A document is a chapter (`chapter_id` = its BEIR id) whose title is the heading embedded with every
chunk, so long abstracts are chunked like book sections and a document scores as its best chunk.
"""

from __future__ import annotations

import csv
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag.errors import InputError
from rag.index.build import BookIndex, content_status, open_index, sync_sections
from rag.index.vectors import VectorStore
from rag.providers.base import Embedder
from rag.retrieval.hybrid import collect_candidates
from rag.tuning.metrics import ideal_dcg, ndcg_by_rank
from rag.types import Section

WEIGHTS = np.round(np.arange(21) * 0.05, 2)
NDCG_AT, RECALL_AT = 10, 100
Progress = Callable[[str, float], None]


@dataclass(frozen=True)
class BeirData:
    name: str
    corpus: dict[str, tuple[str, str]]  # doc id -> (title, text)
    queries: dict[str, str]  # only the queries that have judgements in the split
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> graded relevance
    corpus_hash: str


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}, line {number}: not valid JSON ({e.msg}).") from e
            if not isinstance(row, dict) or "_id" not in row:
                raise InputError(f"{path}, line {number}: a BEIR record needs an \"_id\" field.")
            rows.append(row)
    return rows


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as f:
        for number, row in enumerate(csv.reader(f, delimiter="\t"), start=1):
            if not row or (number == 1 and row[0] == "query-id"):
                continue
            try:
                qid, doc, score = row[0], row[1], int(row[2])
            except (IndexError, ValueError) as e:
                raise InputError(f"{path}, line {number}: expected query-id, corpus-id and an "
                                 "integer score separated by tabs.") from e
            if score > 0:
                qrels.setdefault(qid, {})[doc] = score
    return qrels


def load_beir(directory: Path, split: str = "test") -> BeirData:
    """corpus.jsonl, queries.jsonl and qrels/SPLIT.tsv; queries without judgements are dropped."""
    directory = Path(directory)
    paths = {"corpus": directory / "corpus.jsonl", "queries": directory / "queries.jsonl",
             "qrels": directory / "qrels" / f"{split}.tsv"}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise InputError(f"{directory} is not a BEIR folder with a {split!r} split: missing "
                         f"{', '.join(missing)}.")
    corpus = {str(r["_id"]): (str(r.get("title") or ""), str(r.get("text") or ""))
              for r in _read_jsonl(paths["corpus"])}
    qrels = _read_qrels(paths["qrels"])
    queries = {str(r["_id"]): str(r.get("text") or "") for r in _read_jsonl(paths["queries"])}
    queries = {qid: text for qid, text in queries.items() if qid in qrels and text.strip()}
    if not queries:
        raise InputError(f"No query in {paths['queries']} has a judgement in {paths['qrels']}.")
    digest = hashlib.sha256()
    for doc_id, (title, text) in corpus.items():
        digest.update(f"{doc_id}\x00{title}\x00{text}\x01".encode())
    return BeirData(directory.name, corpus, queries, qrels, digest.hexdigest()[:16])


def corpus_sections(data: BeirData) -> list[Section]:
    return [Section(module_id="beir", chapter_id=doc_id, section_id="", title=title,
                    chapter_title=title, heading_path=(title,) if title.strip() else (),
                    stable=True, text=text or title, page=None, source_path="corpus.jsonl")
            for doc_id, (title, text) in data.corpus.items()]


def open_beir_index(data: BeirData, index_dir: Path, embedder: Embedder, store: VectorStore,
                    progress: Progress | None = None) -> BookIndex:
    """The corpus indexed like a book (the same chunker, embedder, BM25 and manifest), built on
    first use and re-embedded only where the corpus, chunker or embedder changed."""
    book_id = f"beir-{data.name}"
    if not content_status(book_id, data.corpus_hash, index_dir, embedder, False,
                          lexical=store.lexical)["fresh"]:
        sync_sections(corpus_sections(data), book_id, data.corpus_hash, index_dir, embedder,
                      store, {"book_root": data.name}, progress=progress, sentences=False)
    return open_index(book_id, index_dir, embedder, store)


def document_scores(doc_ids: np.ndarray, dense: np.ndarray, bm25: np.ndarray,
                    weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best-chunk score of every document in a pool for each weight: (documents, W x D)."""
    order = np.argsort(doc_ids, kind="stable")
    docs, starts = np.unique(doc_ids[order], return_index=True)
    w = weights[:, None].astype(np.float32)
    blended = w * dense[order][None, :] + (np.float32(1) - w) * bm25[order][None, :]
    return docs, np.maximum.reduceat(blended, starts, axis=1)


def rank_documents(docs: np.ndarray, scores: np.ndarray, k: int) -> list[str]:
    """Best first; equal scores in document-id order so runs are reproducible."""
    order = np.lexsort((docs, -scores))[:k]
    return [str(d) for d in docs[order]]


def score_query(docs: np.ndarray, scores: np.ndarray, relevant: dict[str, int]
                ) -> tuple[np.ndarray, np.ndarray]:
    """nDCG@10 and Recall@100 of one query for every weight (rows of scores), as ndcg_at and
    recall_at on rank_documents' order (docs are sorted, so index order is id order)."""
    index = np.broadcast_to(np.arange(len(docs)), scores.shape)
    order = np.lexsort((index, -scores), axis=-1)[:, :RECALL_AT]
    gains = np.array([relevant.get(str(d), 0) for d in docs], dtype=float)[order]
    ndcg = ndcg_by_rank(gains[:, :NDCG_AT], ideal_dcg(list(relevant.values()), NDCG_AT))[:, -1]
    return ndcg, (gains > 0).sum(axis=1) / max(len(relevant), 1)


@dataclass(frozen=True)
class BeirResult:
    queries: int
    dense_weight: float
    best_w_dense: float
    weights: np.ndarray
    ndcg_by_weight: np.ndarray  # mean nDCG@10 per weight
    recall_by_weight: np.ndarray
    seconds: float

    def figures(self, w: float) -> tuple[float, float]:
        i = int(np.argmin(np.abs(self.weights - w)))
        return float(self.ndcg_by_weight[i]), float(self.recall_by_weight[i])

    def to_dict(self) -> dict:
        rows = {"dense": 1.0, "bm25": 0.0, "blended": self.dense_weight,
                "blended_best": self.best_w_dense}
        figures = {label: self.figures(w) for label, w in rows.items()}
        return {"queries": self.queries,
                f"ndcg@{NDCG_AT}": {k: round(v[0], 4) for k, v in figures.items()},
                f"recall@{RECALL_AT}": {k: round(v[1], 4) for k, v in figures.items()},
                "best_w_dense": self.best_w_dense, "dense_weight": self.dense_weight,
                "seconds": round(self.seconds, 1)}


def run_benchmark(data: BeirData, index: BookIndex, dense_weight: float = 0.85,
                  max_queries: int | None = None, pool_size: int = 200,
                  progress: Progress | None = None) -> BeirResult:
    """One candidate pass per query, then every weight in WEIGHTS (plus the given one) by
    arithmetic; pool_size chunks per side must cover RECALL_AT documents."""
    started = time.perf_counter()
    weights = np.unique(np.append(WEIGHTS, round(float(dense_weight), 4)))
    query_ids = list(data.queries)[: max_queries or None]
    ndcg = np.zeros((len(query_ids), len(weights)))
    recall = np.zeros_like(ndcg)
    for n, qid in enumerate(query_ids):
        pool = collect_candidates(index, data.queries[qid], pool_size)
        doc_ids = np.array([c.chapter_id for c in pool.chunks])
        docs, scores = document_scores(doc_ids, pool.dense, pool.bm25.astype(np.float32), weights)
        ndcg[n], recall[n] = score_query(docs, scores, data.qrels[qid])
        if progress is not None and n % 20 == 0:
            progress(f"Query {n + 1}/{len(query_ids)}", n / max(len(query_ids), 1))
    mean_ndcg, mean_recall = ndcg.mean(axis=0), recall.mean(axis=0)
    on_grid = np.isin(weights, WEIGHTS)
    # The best weight is picked on the 0.05 grid; ties go to the weight nearest the given one.
    candidates = np.flatnonzero(on_grid & (mean_ndcg >= mean_ndcg[on_grid].max() - 1e-12))
    best = candidates[np.argmin(np.abs(weights[candidates] - dense_weight))]
    return BeirResult(len(query_ids), float(dense_weight), float(weights[best]), weights,
                      mean_ndcg, mean_recall, time.perf_counter() - started)
