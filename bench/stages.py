"""What each retrieval stage does, measured: composite term match, the offline re-ranker, and
per-type points, each switched on and off.

    .venv/bin/python bench/stages.py                   # both labelled sets (temp index)
    .venv/bin/python bench/stages.py --index DIR       # reuse an index holding both books
    .venv/bin/python bench/stages.py --scifact DIR     # + BEIR SciFact train (index cached in DIR)

Labelled sets (data/eval/questions.yaml on the sample book, data/eval/physical-ai.yaml on
../shared/data/physical-ai-book): hit@1, hit@5 and MRR of the in-scope questions (ranking at
threshold 0, one chunk per section, as the app cuts), then answer accuracy and false-answer rate
through the whole pipeline at the active threshold, and the re-ranking stage's p50/p95 time.
SciFact (train split, the only one with labels here): nDCG@10 at each variant's best dense
weight on the 0.05 grid (chosen on train, reported on train, as the issue asks).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from rag.answer.pipeline import Pipeline  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.retrieval.hybrid import blend_scores, collect_candidates, rank_candidates  # noqa: E402
from rag.retrieval.rerank import OfflineReranker, rerank  # noqa: E402
from rag.tuning.answers import answer_accuracy, false_answer_rate, outcome_of  # noqa: E402
from rag.tuning.metrics import entry_matches  # noqa: E402
from rag.tuning.questions import load_questions  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
SETS = (("sample", ROOT / "data" / "book", ROOT / "data" / "eval" / "questions.yaml"),
        ("physical-ai", SHARED / "physical-ai-book", ROOT / "data" / "eval" / "physical-ai.yaml"))
VARIANTS = {
    "hybrid (today)": {},
    "+ term match 0.1": {"w_terms": 0.1},
    "+ term match 0.2": {"w_terms": 0.2},
    "+ term match 0.3": {"w_terms": 0.3},
    "+ offline re-rank 0.3": {"rerank": "offline", "rerank_weight": 0.3},
    "+ offline re-rank 0.5": {"rerank": "offline", "rerank_weight": 0.5},
    "+ term match 0.2 + re-rank 0.3": {"w_terms": 0.2, "rerank": "offline",
                                       "rerank_weight": 0.3},
    "+ term match 0.1 + re-rank 0.2": {"w_terms": 0.1, "rerank": "offline",
                                       "rerank_weight": 0.2},
}


def ranking(index, questions, base) -> dict[str, dict]:
    pools = {q.question: collect_candidates(index, q.question, base.candidate_pool)
             for q in questions if q.in_scope}
    out = {}
    for name, change in VARIANTS.items():
        s = dataclasses.replace(base, threshold=0.0, **change)
        h1 = h5 = rr = 0.0
        rerank_ms = []
        for q in questions:
            if not q.in_scope:
                continue
            pool = pools[q.question]
            result = rerank(rank_candidates(pool, s), pool, index)
            if "rerank_ms" in result.latency_ms:
                rerank_ms.append(result.latency_ms["rerank_ms"])
            ranks = [i for i, h in enumerate(result.hits[:5]) if any(
                entry_matches(e, h.chunk.chapter_id, h.chunk.section_id)
                for e in q.expected_sections)]
            if ranks:
                h1 += ranks[0] == 0
                h5 += 1
                rr += 1 / (ranks[0] + 1)
        n = len(pools)
        out[name] = {"hit@1": round(h1 / n, 3), "hit@5": round(h5 / n, 3),
                     "mrr": round(rr / n, 3)}
        if rerank_ms:
            out[name]["rerank_ms_p50"] = round(statistics.median(rerank_ms), 2)
            out[name]["rerank_ms_p95"] = round(float(np.percentile(rerank_ms, 95)), 2)
    return out


def answers(index, questions, settings) -> dict[str, dict]:
    pipeline = Pipeline(index, settings)
    out = {}
    for name, change in VARIANTS.items():
        variant = dataclasses.replace(settings, **change)
        outcomes, times = [], []
        for q in questions:
            t0 = time.perf_counter()
            response = pipeline.answer(q.question, settings=variant)
            times.append((time.perf_counter() - t0) * 1000)
            outcomes.append(outcome_of(q, response, times[-1]))
        out[name] = {"answer_accuracy": round(answer_accuracy(outcomes) or 0, 3),
                     "false_answer_rate": round(false_answer_rate(outcomes) or 0, 3),
                     "answer_ms_p95": round(float(np.percentile(times, 95)), 1)}
    return out


def labelled(index_dir: Path) -> dict:
    report = {}
    for name, book, qfile in SETS:
        if not book.is_dir():
            print(f"{name}: {book} is not here, skipped", file=sys.stderr)
            continue
        settings = load_settings(book_dir=book, index_dir=index_dir)
        index, _ = load_index(settings)
        questions = load_questions(qfile)
        rows = ranking(index, questions, settings.retrieval)
        for variant, figures in answers(index, questions, settings).items():
            rows[variant].update(figures)
        report[name] = rows
        print(json.dumps({name: rows}, indent=1), flush=True)
    return report


def scifact(index_dir: Path, max_queries: int | None, sentences: bool = False) -> dict:
    from rag.index.sentences import load_sentences, sync_sentences
    from rag.index.vectors import open_store
    from rag.providers.registry import get_embedder
    from rag.tuning.beir import (
        NDCG_AT,
        WEIGHTS,
        corpus_sections,
        load_beir,
        open_beir_index,
        score_query,
    )

    data = load_beir(SHARED / "scifact", "train")
    settings = load_settings(index_dir=index_dir)
    embedder = get_embedder(settings)
    index = open_beir_index(data, index_dir, embedder, open_store(index_dir))
    if sentences:  # units of every abstract embedded once (kept beside the cached index)
        folder = index_dir / "scifact-sentences"
        t0 = time.perf_counter()
        sync_sentences(folder, corpus_sections(data), embedder)
        index = dataclasses.replace(index, sentences=load_sentences(folder, embedder.dim))
        print(f"sentence vectors ready in {time.perf_counter() - t0:.0f} s", flush=True)
    reranker = OfflineReranker(index)
    qids = list(data.queries)[: max_queries or None]
    pools = [collect_candidates(index, data.queries[q], 200) for q in qids]
    out = {}
    for name, change in VARIANTS.items():
        best = (-1.0, 0.0)
        for w in WEIGHTS:
            scores = []
            for qid, pool in zip(qids, pools, strict=True):
                blended = blend_scores(pool.dense, pool.bm25, float(w), signals=pool.signals,
                                       signal_weights={"terms": change.get("w_terms", 0.0)})
                if change.get("rerank"):
                    top = np.argsort(-blended, kind="stable")[:20]
                    s = dataclasses.replace(settings.retrieval, w_dense=float(w))
                    hits = [h for h in rank_candidates(pool, dataclasses.replace(
                        s, threshold=0.0, **{k: v for k, v in change.items()
                                             if k == "w_terms"})).candidates
                            if h.rank <= 20]
                    rr = dict(zip((h.chunk.chunk_id for h in hits),
                                  reranker.score_hits(pool, hits), strict=True))
                    mix = change["rerank_weight"]
                    for i in top:
                        cid = pool.chunks[i].chunk_id
                        blended[i] = 10 + (1 - mix) * blended[i] + mix * rr.get(cid, 0.0)
                doc_ids = np.array([c.chapter_id for c in pool.chunks])
                order = np.argsort(doc_ids, kind="stable")
                docs, starts = np.unique(doc_ids[order], return_index=True)
                by_doc = np.maximum.reduceat(blended[order], starts)
                ndcg, _ = score_query(docs, by_doc[None, :].astype(np.float32), data.qrels[qid])
                scores.append(float(ndcg[0]))
            mean = float(np.mean(scores))
            if mean > best[0]:
                best = (mean, float(w))
        out[name] = {f"ndcg@{NDCG_AT}": round(best[0], 4), "best_w_dense": best[1]}
        print(name, out[name], flush=True)
    return {"queries": len(qids), "variants": out}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="an index dir holding both books")
    parser.add_argument("--scifact", type=Path, metavar="DIR", help="SciFact index cache")
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--skip-labelled", action="store_true")
    parser.add_argument("--scifact-sentences", action="store_true",
                        help="embed SciFact's sentences too, so the offline re-ranker can use "
                             "them (several minutes the first time)")
    args = parser.parse_args()
    report = {}
    if args.skip_labelled:
        pass
    elif args.index:
        report["labelled"] = labelled(args.index)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            report["labelled"] = labelled(Path(tmp))
    if args.scifact and (SHARED / "scifact").is_dir():
        report["scifact_train"] = scifact(args.scifact, args.max_queries,
                                          args.scifact_sentences)
    out = ROOT / "bench" / "results" / "stages.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
