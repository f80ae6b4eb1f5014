"""Tuning figures: candidate pass (questions/s), full sweep time for N questions × 21 weights × 101
thresholds, peak memory, and the answer passes (ms a question, answer accuracy) of one evaluation.

    .venv/bin/python bench/tuning.py [--index DIR] [--questions FILE] [--n 800]

The sample set has ~100 questions; the N-question sweep repeats their candidate pools with small
random perturbations of the scores, so its arrays have the real shape (pool sizes, sections).
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from rag.config import PROJECT_ROOT, load_settings  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.retrieval.hybrid import CandidatePool  # noqa: E402
from rag.tuning.evaluate import CURRENT, RECOMMENDED, evaluate_set  # noqa: E402
from rag.tuning.questions import load_questions  # noqa: E402
from rag.tuning.recommend import recommend  # noqa: E402
from rag.tuning.sweep import build_arrays, run_sweep  # noqa: E402


def perturbed(pools: list[CandidatePool], questions, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    out_pools, out_questions = [], []
    for i in range(n):
        pool, q = pools[i % len(pools)], questions[i % len(questions)]
        noise = rng.normal(0, 0.02, size=len(pool.dense)).astype(np.float32)
        out_pools.append(dataclasses.replace(
            pool, dense=np.clip(pool.dense + noise, 0, 1),
            bm25_raw=pool.bm25_raw * rng.uniform(0.9, 1.1, size=len(pool.bm25_raw))
            .astype(np.float32)))
        out_questions.append(dataclasses.replace(q, question=f"{q.question} #{i}"))
    return out_questions, out_pools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, help="index folder (default: data/index)")
    parser.add_argument("--questions", type=Path,
                        default=PROJECT_ROOT / "data" / "eval" / "questions.yaml")
    parser.add_argument("--n", type=int, default=800, help="questions in the big sweep")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-answers", action="store_true", dest="no_answers",
                        help="skip the answer passes (~20-150 ms a question each)")
    args = parser.parse_args()
    settings = load_settings(index_dir=args.index)
    index, _ = load_index(settings)
    questions = load_questions(args.questions)
    evaluate_set(index, settings, questions[:3], answers=False)  # warm the model
    started = time.perf_counter()
    evaluation = evaluate_set(index, settings, questions, answers=False)
    seconds = time.perf_counter() - started
    pools = [evaluation.pools[q.question] for q in questions]
    print(f"candidate pass (+ one sweep, ~50 ms): {len(questions)} questions in {seconds:.2f} s = "
          f"{len(questions) / seconds:.1f} questions/s (pool {settings.candidate_pool}, "
          f"mean {np.mean([len(p.chunks) for p in pools]):.0f} candidates)")

    big_questions, big_pools = perturbed(pools, questions, args.n)
    sections = sorted({c.section_ref for c in index.chunks})
    started = time.perf_counter()
    arrays = build_arrays(big_questions, big_pools, settings.top_k, sections)
    build_s = time.perf_counter() - started
    timings = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        result = run_sweep(arrays)
        timings.append(time.perf_counter() - started)
    started = time.perf_counter()
    recommend(result, "max_f1", current=(settings.w_dense, settings.threshold))
    recommend_s = time.perf_counter() - started
    tracemalloc.start()
    run_sweep(arrays)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"sweep: {args.n} questions × {len(result.weights)} weights × "
          f"{len(result.thresholds)} thresholds, {int((arrays.slot >= 0).sum())} candidates: "
          f"arrays {build_s:.2f} s, sweep best {min(timings):.3f} s / median "
          f"{float(np.median(timings)):.3f} s, recommendation {recommend_s:.3f} s")
    print(f"peak memory: sweep {peak / 2**20:.1f} MiB (tracemalloc), process "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB max RSS")
    if not args.no_answers:
        bench_answers(index, settings, questions, evaluation.pools)


def bench_answers(index, settings, questions, pools) -> None:
    """The answer passes of one evaluation (pools reused, so only answering is timed)."""
    started = time.perf_counter()
    evaluation = evaluate_set(index, settings, questions, pools=pools)
    seconds = time.perf_counter() - started
    passes = 1 if evaluation.points[CURRENT] == evaluation.points[RECOMMENDED] else 2
    print(f"answer passes: {passes} × {len(questions)} questions in {seconds:.1f} s = "
          f"{1000 * seconds / (passes * len(questions)):.0f} ms a question (offline answerer)")
    for name in (CURRENT, RECOMMENDED):
        r = evaluation.answer_report(name, with_questions=False)
        figures = ", ".join(f"{k} {'-' if r[k] is None else format(r[k], '.3f')}"
                            for k in ("accuracy", "false_answer_rate", "ece", "auroc"))
        print(f"  {name}: {figures} ({r['n_with_key_facts']} questions with key facts, "
              f"p50 {np.median([o.latency_ms for o in evaluation.answers[name]]):.0f} ms)")


if __name__ == "__main__":
    main()
