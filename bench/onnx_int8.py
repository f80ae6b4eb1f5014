"""Would int8 MiniLM do? Dynamic int8 quantisation (onnxruntime.quantization) of the fp32 ONNX
export, measured against fp32 in the same run: cosine to PyTorch's vectors, query latency, and
retrieval quality on a labelled question set with the book ingested and queried through each.

    python bench/onnx_int8.py [--book data/book] [--questions data/eval/questions.yaml]
                              [--scifact-index DIR]

--scifact-index reuses the SciFact index bench/retrieval.py built (its fp32 document vectors)
and adds nDCG@10 on BEIR SciFact with the queries embedded through each variant. Folio keeps
fp32 unless int8 keeps nDCG within 0.005 of fp32 (issue 14).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import rag  # noqa: E402,F401
from rag.book.chunk import embed_text_for  # noqa: E402
from rag.book.parse import book_id_for, parse_book  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.build import open_index, sync_index  # noqa: E402
from rag.index.vectors import open_store  # noqa: E402
from rag.providers.local_embedder import LocalEmbedder  # noqa: E402
from rag.providers.onnx_runtime import OnnxEncoder  # noqa: E402
from rag.tuning.evaluate import sweep_questions  # noqa: E402
from rag.tuning.questions import load_questions  # noqa: E402
from rag.tuning.sweep import run_sweep  # noqa: E402

METRICS = ("hit_at_k", "recall_at_k", "mrr", "ndcg_at_k", "f1")
SCIFACT = ROOT.parent / "shared" / "data" / "scifact"
MAX_NDCG_LOSS = 0.005


def quantize(fp32: Path, target: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True)
    return target


def with_encoder(encoder: OnnxEncoder, cache: Path) -> LocalEmbedder:
    """A local embedder that runs `encoder` (the int8 variant is never a product path)."""
    embedder = LocalEmbedder(runtime="onnx", cache_dir=cache)
    embedder._encoder, embedder._tried = encoder, True
    return embedder


def query_latency(variants: dict[str, LocalEmbedder], queries: list[str]) -> dict[str, tuple]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for q in queries[:5]:
        for e in variants.values():
            e.embed_query(q)
    for q in queries:
        for name, e in variants.items():
            t0 = time.perf_counter()
            e.embed_query(q)
            times[name].append((time.perf_counter() - t0) * 1000)
    return {n: (statistics.median(v), sorted(v)[int(0.95 * (len(v) - 1))])
            for n, v in times.items()}


def quality(embedder: LocalEmbedder, book: Path, questions, work: Path) -> dict[str, float]:
    settings = load_settings(env={}, book_dir=book, index_dir=work)
    store = open_store(work)
    try:
        sync_index(book, work, embedder, store)
        index = open_index(parse_book(book).book_id, work, embedder, store)
        result, _ = sweep_questions(index, questions, settings.top_k, settings.candidate_pool)
        w, t = settings.w_dense, settings.threshold
        return run_sweep(result.arrays, [w], [t]).at(w, t)
    finally:
        store.close()


def scifact_quality(index_dir: Path, variants: dict[str, LocalEmbedder]) -> None:
    """nDCG@10 on SciFact (train qrels) per query embedder, over bench/retrieval.py's index (a
    book of one chapter "d<id>" per abstract, its vectors embedded in fp32)."""
    from rag.tuning.beir import load_beir, run_benchmark

    data = load_beir(SCIFACT, "train")
    book_dir = index_dir / "books" / "scifact-book"
    settings = load_settings(env={}, book_dir=book_dir, index_dir=index_dir)
    store = open_store(index_dir)
    try:
        index = open_index(book_id_for(book_dir), index_dir, variants["onnx fp32"], store)
        chunks = [dataclasses.replace(c, chapter_id=c.chapter_id.removeprefix("d"))
                  for c in index.chunks]
        base = dataclasses.replace(index, chunks=chunks)
        found = {}
        for name, embedder in variants.items():
            result = run_benchmark(data, dataclasses.replace(base, embedder=embedder),
                                   settings.w_dense, pool_size=300)
            found[name] = result.figures(settings.w_dense)[0]
            print(f"{name:<10} SciFact nDCG@10 {found[name]:.4f} at w_dense {settings.w_dense} "
                  f"({result.queries} queries, {len(chunks)} chunks, {result.seconds:.0f} s)")
        loss = found["onnx fp32"] - found["onnx int8"]
        print(f"int8 queries lose {loss:.4f} SciFact nDCG@10 against fp32 documents")
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--book", type=Path, default=ROOT / "data" / "book")
    parser.add_argument("--questions", type=Path,
                        default=ROOT / "data" / "eval" / "questions.yaml")
    parser.add_argument("--scifact-index", type=Path, dest="scifact_index",
                        help="a SciFact index built by bench/retrieval.py --index DIR")
    args = parser.parse_args()
    questions = load_questions(args.questions)
    with tempfile.TemporaryDirectory(prefix="folio-int8-") as tmp:
        work = Path(tmp)
        fp32 = LocalEmbedder(runtime="onnx", cache_dir=work / "onnx")
        encoder = fp32.onnx_encoder()
        if encoder is None:
            print(f"no ONNX export: {fp32.notices[0].message}", file=sys.stderr)
            return 1
        int8_path = quantize(encoder.path, work / "model.int8.onnx")
        tokenizer = fp32.directory / "tokenizer.json"
        variants = {"torch": LocalEmbedder(runtime="torch"), "onnx fp32": fp32,
                    "onnx int8": with_encoder(OnnxEncoder(int8_path, tokenizer), work / "x")}
        book = parse_book(args.book)
        texts = [embed_text_for(s.heading_path, s.text) for s in book.sections][:120]
        queries = [q.question for q in questions]
        reference = variants["torch"].embed_documents(texts)
        reference_q = np.vstack([variants["torch"].embed_query(q) for q in queries])
        print(f"model size: fp32 {encoder.path.stat().st_size / 1e6:.1f} MB, "
              f"int8 {int8_path.stat().st_size / 1e6:.1f} MB")
        for name in ("onnx fp32", "onnx int8"):
            docs = np.sum(variants[name].embed_documents(texts) * reference, axis=1)
            qs = np.sum(np.vstack([variants[name].embed_query(q) for q in queries])
                        * reference_q, axis=1)
            print(f"{name}: cosine to PyTorch, sections min {docs.min():.4f} mean "
                  f"{docs.mean():.4f}; questions min {qs.min():.4f} mean {qs.mean():.4f}")
        for name, (p50, p95) in query_latency(variants, queries).items():
            print(f"{name:<10} query embedding p50 {p50:.2f} ms, p95 {p95:.2f} ms")
        scores = {}
        for name in ("onnx fp32", "onnx int8"):
            scores[name] = quality(variants[name], args.book, questions, work / name)
            print(f"{name:<10} " + ", ".join(f"{m} {scores[name][m]:.4f}" for m in METRICS))
        loss = scores["onnx fp32"]["ndcg_at_k"] - scores["onnx int8"]["ndcg_at_k"]
        verdict = "keeps" if loss <= MAX_NDCG_LOSS else "does NOT keep"
        print(f"int8 loses {loss:.4f} nDCG@k: {verdict} quality within {MAX_NDCG_LOSS}")
        if args.scifact_index:
            scifact_quality(args.scifact_index, variants)
    return 0


if __name__ == "__main__":
    sys.exit(main())
