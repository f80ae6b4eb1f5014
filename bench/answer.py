"""End-to-end latency of `ask` (Pipeline.answer) with the offline extractive answerer.

    .venv/bin/python bench/answer.py                         # sample book, index in data/index
    .venv/bin/python bench/answer.py --index /tmp/folio-bench --rounds 10

Every question of the set (default data/eval/questions.yaml; `--book` and `--questions` for
another book) is asked once as a warm-up, reported separately (sentence vectors are kept with
the index, so it differs from later passes only by caches), then `--rounds` more times timed.
Reports p50/p95 of the whole call, the share of time per stage (context, retrieval with its
embed/dense/bm25/fetch/rank breakdown, synthesis, guardrails) and the load average, because
figures from a shared 2-core machine mean little without it.
Target: p95 <= 150 ms.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from rag.answer.pipeline import Pipeline  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.load import load_index  # noqa: E402

QUESTIONS = ROOT / "data" / "eval" / "questions.yaml"
STAGES = ("context", "retrieval", "synthesis", "guardrails")
RETRIEVAL_PARTS = ("embed_ms", "dense_ms", "bm25_ms", "fetch_ms", "rank_ms")
TARGET_P95_MS = 150.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def load_questions(path: Path) -> list[str]:
    import yaml

    return [q["question"] for q in yaml.safe_load(path.read_text(encoding="utf-8"))["questions"]]


def run(index_dir: Path | None, rounds: int, book: Path | None = None,
        question_set: Path = QUESTIONS) -> dict:
    settings = load_settings(index_dir=index_dir, llm="extractive", book_dir=book)
    # the budget is not what is measured here: a load spike must not turn answers into errors
    settings = dataclasses.replace(settings, budget_total_s=60.0, budget_retrieval_s=30.0,
                                   budget_synthesis_s=30.0)
    index, _ = load_index(settings)
    pipeline = Pipeline(index, settings, llm=None, audit=None)
    questions = load_questions(question_set)
    first_pass = []
    for question in questions:  # warm-up: caches, allocator; the model loaded with the pipeline
        t0 = time.perf_counter()
        pipeline.answer(question)
        first_pass.append((time.perf_counter() - t0) * 1000)
    load_before = os.getloadavg()
    totals: list[float] = []
    stage_ms: dict[str, float] = dict.fromkeys(STAGES, 0.0)
    part_ms: dict[str, float] = dict.fromkeys(RETRIEVAL_PARTS, 0.0)
    statuses: Counter[str] = Counter()
    for _ in range(rounds):
        for question in questions:
            t0 = time.perf_counter()
            response = pipeline.answer(question)
            totals.append((time.perf_counter() - t0) * 1000)
            statuses[response.status] += 1
            latency = response.metadata["latency_ms"]
            for stage in STAGES:
                stage_ms[stage] += latency.get(stage, 0.0)
            for part, ms in response.metadata.get("retrieval_breakdown_ms", {}).items():
                if part in part_ms:
                    part_ms[part] += ms
    total_ms = sum(totals)
    return {
        "book": str(settings.book_dir), "questions": len(questions), "rounds": rounds,
        "calls": len(totals), "statuses": dict(statuses),
        "p50_ms": round(statistics.median(totals), 1), "p95_ms": round(percentile(totals, 95), 1),
        "mean_ms": round(statistics.fmean(totals), 1), "max_ms": round(max(totals), 1),
        "first_pass_p50_ms": round(statistics.median(first_pass), 1),
        "first_pass_p95_ms": round(percentile(first_pass, 95), 1),
        "stage_share": {s: round(ms / total_ms, 3) for s, ms in stage_ms.items()},
        "retrieval_share": {p[:-3]: round(ms / total_ms, 3) for p, ms in part_ms.items()},
        "stage_mean_ms": {s: round(ms / len(totals), 2) for s, ms in stage_ms.items()},
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count(),
        "target_p95_ms": TARGET_P95_MS,
    }


def print_report(r: dict) -> None:
    verdict = "meets" if r["p95_ms"] <= r["target_p95_ms"] else "MISSES"
    print(f"ask (extractive) on {r['book']}: {r['questions']} questions × {r['rounds']} rounds "
          f"= {r['calls']} calls, statuses {r['statuses']}")
    print(f"latency   p50 {r['p50_ms']} ms   p95 {r['p95_ms']} ms   mean {r['mean_ms']} ms   "
          f"max {r['max_ms']} ms — {verdict} the {r['target_p95_ms']:.0f} ms p95 target")
    print(f"first pass (warm-up): p50 {r['first_pass_p50_ms']} ms   "
          f"p95 {r['first_pass_p95_ms']} ms")
    print("share of time per stage (mean ms per call):")
    for stage, share in r["stage_share"].items():
        print(f"  {stage:<11} {share:6.1%}   {r['stage_mean_ms'][stage]:7.2f} ms")
        if stage == "retrieval":
            for part, part_share in r["retrieval_share"].items():
                print(f"    {part:<9} {part_share:6.1%}")
    print(f"load average (1/5/15 min) before {r['load_before']}, after {r['load_after']} "
          f"on {r['cores']} cores")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, help="index folder (default: RAG_INDEX_DIR or "
                        "data/index); built if missing")
    parser.add_argument("--rounds", type=int, default=5, help="timed passes over the questions")
    parser.add_argument("--book", type=Path, help="book folder (default: the sample book)")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="question set")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = parser.parse_args()
    result = run(args.index, max(1, args.rounds), args.book, args.questions)
    print(json.dumps(result)) if args.json else print_report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
