"""Query latency of the two lexical backends: bm25s files against Qdrant's sparse vectors.

    .venv/bin/python bench/lexical_backends.py                  # sample book and SciFact
    .venv/bin/python bench/lexical_backends.py --only sample --queries 50

One index per dataset is built with RAG_LEXICAL=qdrant (the bm25s files are written too) and
opened once per backend, so both search the same chunks. Dense vectors come from a stand-in
embedder (MiniLM's tokenizer for chunking, hashed unit vectors), so "lexical" is the stage that
differs: BM25 top-50, raw BM25 of the dense side's 50 candidates, and their term coverage. It
runs in qdrant-client's local mode, where every sparse query is a Python scan over all chunks;
a Qdrant server answers from an inverted index, so these are not server figures.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from rag.book.parse import parse_book  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.build import open_index, sync_sections  # noqa: E402
from rag.index.vectors import open_store  # noqa: E402
from rag.providers.base import Embedder  # noqa: E402
from rag.providers.registry import get_embedder  # noqa: E402
from rag.tuning.beir import corpus_sections, load_beir  # noqa: E402

SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
POOL = 50


class HashedEmbedder(Embedder):
    """MiniLM's token counts (so chunks are the app's), hashed vectors (nothing is embedded)."""

    name, model_id, dim = "hashed", "hashed-minilm-tokens", 384

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.max_tokens = inner, inner.max_tokens

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        return self.inner.count_tokens_batch(texts)

    def _embed_batch(self, texts: list[str], input_type: str) -> np.ndarray:
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little") for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(self.dim) for s in seeds])


def dataset(name: str, limit: int) -> tuple[str, str, list, list[str]]:
    if name == "sample":
        import yaml

        book = parse_book(ROOT / "data" / "book")
        questions = yaml.safe_load((ROOT / "data" / "eval" / "questions.yaml").read_text())
        return book.book_id, book.content_hash, book.sections, \
            [q["question"] for q in questions["questions"]][:limit]
    data = load_beir(SCIFACT, split="train")  # the split shipped in shared/data
    return "beir-scifact", data.corpus_hash, corpus_sections(data), \
        list(data.queries.values())[:limit]


def lexical_ms(index, questions: list[str]) -> list[float]:
    """BM25 top-50, then raw BM25 and coverage of those plus the dense side's top-50."""
    times = []
    for question in questions:
        dense = index.store.search(index.collection, index.embedder.embed_query(question), POOL)
        started = time.perf_counter()
        matches = index.lexical.match(question, POOL)
        positions = list(dict.fromkeys([index.positions[c] for c, _ in dense] + matches.order))
        matches.raw(positions)
        matches.coverage(positions)
        times.append((time.perf_counter() - started) * 1000)
    return times


def run(name: str, limit: int) -> None:
    embedder = HashedEmbedder(get_embedder(load_settings(env={})))
    book_id, content_hash, sections, questions = dataset(name, limit)
    with tempfile.TemporaryDirectory() as work:
        os.environ["RAG_LEXICAL"] = "qdrant"
        store = open_store(Path(work))
        started = time.perf_counter()
        result = sync_sections(sections, book_id, content_hash, Path(work), embedder, store,
                               sentences=False)
        print(f"{name}: {result.chunks} chunks, ingest with sparse vectors "
              f"{time.perf_counter() - started:.1f} s")
        indexes = {}
        for backend in ("bm25s", "qdrant"):
            os.environ["RAG_LEXICAL"] = backend
            index = indexes[backend] = open_index(book_id, Path(work), embedder, store)
            lexical_ms(index, questions[:3])  # warm-up
            times = sorted(lexical_ms(index, questions))
            p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
            print(f"  {backend:6s} ({type(index.lexical).__name__}): {len(times)} queries, "
                  f"lexical p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms")
        compare(indexes["bm25s"].lexical, indexes["qdrant"].lexical, questions)
        store.close()


def compare(files, sparse, questions: list[str]) -> None:
    """How far Qdrant's BM25 is from bm25s's: top-50 order, raw scores, term coverage."""
    same_order, raw_error, coverage_error = 0, 0.0, 0.0
    for question in questions:
        ours, theirs = sparse.match(question, POOL), files.match(question, POOL)
        same_order += ours.order == theirs.order
        if theirs.best > 0:
            raw = np.abs(ours.raw(theirs.order) - theirs.raw(theirs.order)) / theirs.best
            raw_error = max(raw_error, float(raw.max(initial=0)))
        coverage = np.abs(ours.coverage(theirs.order) - theirs.coverage(theirs.order))
        coverage_error = max(coverage_error, float(coverage.max(initial=0)))
    print(f"  same top-{POOL} order for {same_order}/{len(questions)} queries; largest raw BM25 "
          f"difference {raw_error:.1e} of the best score, coverage {coverage_error:.1e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("sample", "scifact"))
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    for name in [args.only] if args.only else ["sample", "scifact"]:
        if name == "scifact" and not SCIFACT.is_dir():
            print(f"scifact: skipped, {SCIFACT} is missing")
            continue
        run(name, args.queries)


if __name__ == "__main__":
    main()
