"""Answer quality on every book with labelled sets: one row per book and the macro-average over
books, each beside the passage baseline, at the current settings with the offline answerer.

    .venv/bin/python bench/quality.py                       # development sets, one row a book
    .venv/bin/python bench/quality.py --role "held out"     # the held-out sets (aggregates only)
    .venv/bin/python bench/quality.py --book d2l-book --json
    .venv/bin/python bench/quality.py --sets                # the per-set table (issue 11)
    .venv/bin/python bench/quality.py --sets physical-ai-blind6.yaml

A book row pools the book's sets of the chosen role (bench/labelled_sets.py) and shows:
- facts: in-scope questions whose answer holds every key fact (rag.tuning.answers);
- passage: the baseline beside it, the same count for the first retrieved passage alone (the
  top chunk's text cut to the answerer's word limit, rag.answer.quotes.MAX_WORDS): what showing
  the best passage would score without any answering;
- false: out-of-scope questions answered;
- hit@5 of the expected sections in the sections retrieval selected for the answer, over
  in-scope questions with labels;
- answer latency p50 / p95 over every question of the book.
The macro row averages the books' rates, so a 40-question book weighs as much as one of 450.
The per-set table (--sets) adds AUROC, ECE and the per-level counts, sets and pooled rows.

Indexes are built (or reused while fresh, rag.index.load.load_index) under
--index-root/<book folder> (default $RAG_BENCH_INDEX_ROOT, else build/indexes in the repo,
git-ignored), so several checkouts can share them: `--index-root /work/indexes`.
Nothing here is asserted: it measures, as the other bench scripts do.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from bench.labelled_sets import BOOKS, DEVELOPMENT, EVAL, HELD_OUT  # noqa: E402
from rag.answer.quotes import MAX_WORDS  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.tuning.answers import AnswerOutcome, outcome_of, summarise_answers  # noqa: E402
from rag.tuning.evaluate import evaluation_pipeline  # noqa: E402
from rag.tuning.key_facts import key_facts_found  # noqa: E402
from rag.tuning.metrics import score_ranking  # noqa: E402
from rag.tuning.questions import Question, load_questions  # noqa: E402

ROLES = {"development": (DEVELOPMENT,), "held out": (HELD_OUT,), "all": (DEVELOPMENT, HELD_OUT)}
INDEX_ROOT = Path(os.environ.get("RAG_BENCH_INDEX_ROOT") or ROOT / "build" / "indexes")
RATES = ("facts", "passage", "false", "hit_at_k")


@dataclass(frozen=True)
class SetRun:
    """One labelled set answered: its questions, their outcomes and each first passage."""

    file: str
    role: str
    questions: list[Question]
    outcomes: list[AnswerOutcome]
    first_passages: list[str]  # the top retrieved chunk's text, cut to MAX_WORDS


def first_passage(response: Any) -> str:
    """The first chunk retrieval returned (the selected ones, else every candidate), cut to the
    answerer's word limit."""
    retrieval = response.retrieval
    hits = (retrieval.hits or retrieval.candidates) if retrieval is not None else ()
    return " ".join(hits[0].chunk.text.split()[:MAX_WORDS]) if hits else ""


def run_set(pipeline: Any, settings: Any, file: str, role: str) -> SetRun:
    """Every question of the set through the pipeline, as rag.tuning.answers.answer_pass does,
    keeping the first passage of each retrieval too."""
    questions = load_questions(EVAL / file)
    outcomes, passages = [], []
    for q in questions:
        started = time.perf_counter()
        response = pipeline.answer(q.question, settings=settings)
        outcomes.append(outcome_of(q, response, (time.perf_counter() - started) * 1000,
                                   pipeline.index))
        passages.append(first_passage(response))
    return SetRun(file, role, questions, outcomes, passages)


def run_book(book: Path, files: list[tuple[str, str]], index_root: Path
             ) -> tuple[list[SetRun], int]:
    """The book's sets answered, and the top_k its retrieval selects."""
    settings = load_settings(book_dir=book, index_dir=index_root / book.name, llm="extractive")
    index, _ = load_index(settings)
    pipeline = evaluation_pipeline(index, settings)
    return [run_set(pipeline, settings, file, role) for file, role in files], settings.top_k


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def book_row(name: str, role: str, runs: list[SetRun], top_k: int) -> dict[str, Any]:
    """The pooled figures of one book's runs (see the module docstring)."""
    pairs = [(q, o, p) for r in runs for q, o, p in zip(r.questions, r.outcomes,
                                                          r.first_passages, strict=True)]
    graded = [(q, o, p) for q, o, p in pairs if q.in_scope and q.key_facts]
    outside = [o for q, o, _ in pairs if not q.in_scope]
    labelled = [(q, o) for q, o, _ in pairs if q.in_scope and q.expected_sections]
    right = sum(o.correct for _, o, _ in graded)
    passage = sum(all(key_facts_found(p, q.key_facts)) for q, _, p in graded)
    hits = sum(score_ranking(list(o.sections), q.expected_sections, top_k)["hit"]
               for q, o in labelled)
    latencies = [o.latency_ms for _, o, _ in pairs]
    return {"book": name, "role": role, "sets": [r.file for r in runs],
            "n_in_scope": len(graded), "n_out_of_scope": len(outside),
            "right": right, "facts": _rate(right, len(graded)),
            "passage_right": passage, "passage": _rate(passage, len(graded)),
            "answered_out_of_scope": sum(o.answered for o in outside),
            "false": _rate(sum(o.answered for o in outside), len(outside)),
            "n_labelled": len(labelled), "hits": int(hits),
            "hit_at_k": _rate(int(hits), len(labelled)),
            "latency_p50_ms": round(float(np.percentile(latencies, 50)), 1),
            "latency_p95_ms": round(float(np.percentile(latencies, 95)), 1)}


def macro_row(rows: list[dict[str, Any]], role: str) -> dict[str, Any]:
    """Each rate averaged over the books that have it; latencies averaged too."""
    def mean(key: str) -> float | None:
        values = [r[key] for r in rows if r[key] is not None]
        return round(float(np.mean(values)), 4) if values else None
    return {"book": f"macro-average ({len(rows)} books)", "role": role,
            **{key: mean(key) for key in (*RATES, "latency_p50_ms", "latency_p95_ms")}}


def retrieval_figures(run: SetRun, top_k: int) -> dict[str, Any]:
    """Hit@k and MRR of the sections retrieval selected for the answers, over in-scope
    questions with labels."""
    scores = [score_ranking(list(o.sections), q.expected_sections, top_k)
              for o, q in zip(run.outcomes, run.questions, strict=True)
              if q.in_scope and q.expected_sections]
    n = len(scores)
    return {"n": n, "hit_at_k": round(sum(s["hit"] for s in scores) / n, 4) if n else None,
            "mrr": round(sum(s["rr"] for s in scores) / n, 4) if n else None}


def set_row(name: str, role: str, outcomes: list[AnswerOutcome],
            retrieval: dict[str, Any] | None) -> dict[str, Any]:
    summary = summarise_answers(outcomes)
    return {"set": name, "role": role,
            **{k: summary[k] for k in (
                "n_with_key_facts", "correct", "correct_with_more", "refused_with_facts_shown",
                "n_out_of_scope", "answered_out_of_scope", "auroc", "auroc_interval", "ece",
                "calibration")},
            "levels": {row["level"]: [row["correct"], row["answered"]]
                       for row in summary["per_level"]},
            "retrieval": retrieval}


def measure(roles: tuple[str, ...], role_name: str, books: set[str] | None,
            sets: set[str] | None, index_root: Path) -> dict[str, Any]:
    """Book rows, their macro-average, and per-set rows with the pooled ones of each role."""
    book_rows, set_rows, pooled = [], [], {DEVELOPMENT: [], HELD_OUT: []}
    for book, question_sets in BOOKS:
        chosen = [(f, role) for f, role in question_sets.items() if role in roles
                  and (EVAL / f).exists() and (sets is None or f in sets)]
        if not book.exists() or not chosen or (books is not None and book.name not in books):
            continue
        started = time.perf_counter()
        runs, top_k = run_book(book, chosen, index_root)
        book_rows.append(book_row(book.name, role_name, runs, top_k)
                         | {"seconds": round(time.perf_counter() - started, 1)})
        for run in runs:
            pooled[run.role] += run.outcomes
            set_rows.append(set_row(run.file, run.role, run.outcomes,
                                    retrieval_figures(run, top_k)))
    return {"role": role_name, "index_root": str(index_root), "answer_word_limit": MAX_WORDS,
            "books": book_rows, "macro": macro_row(book_rows, role_name) if book_rows else None,
            "sets": set_rows, "pooled": [set_row(f"all {role}", role, outcomes, None)
                                         for role, outcomes in pooled.items() if outcomes]}


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.2f})" if whole else "-"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def print_books(report: dict[str, Any]) -> None:
    header = (f"{'book':<24} {'role':<11} {'facts in answer':>16} {'passage top-1':>14} "
              f"{'false':>12} {'hit@5':>12} {'p50 ms':>7} {'p95 ms':>7}")
    print(header)
    print("-" * len(header))
    for row in report["books"]:
        print(f"{row['book']:<24} {row['role']:<11} "
              f"{_share(row['right'], row['n_in_scope']):>16} "
              f"{_share(row['passage_right'], row['n_in_scope']):>14} "
              f"{_share(row['answered_out_of_scope'], row['n_out_of_scope']):>12} "
              f"{_share(row['hits'], row['n_labelled']):>12} "
              f"{row['latency_p50_ms']:>7.0f} {row['latency_p95_ms']:>7.0f}")
    macro = report["macro"]
    if macro:
        print("-" * len(header))
        print(f"{macro['book']:<24} {macro['role']:<11} {_pct(macro['facts']):>16} "
              f"{_pct(macro['passage']):>14} {_pct(macro['false']):>12} "
              f"{_pct(macro['hit_at_k']):>12} {macro['latency_p50_ms']:>7.0f} "
              f"{macro['latency_p95_ms']:>7.0f}")


def print_sets(report: dict[str, Any]) -> None:
    header = (f"{'set':<28} {'role':<11} {'right':>14} {'+more':>6} {'shown':>5} "
              f"{'false':>13} {'AUROC [95 %]':>19} {'ECE (calib.)':>13} {'high':>6} "
              f"{'medium':>7} {'low':>6} {'hit@k':>6} {'MRR':>6}")
    print(header)
    print("-" * len(header))
    for row in report["sets"] + report["pooled"]:
        interval = row["auroc_interval"]
        auroc = "-" if row["auroc"] is None else (
            f"{row['auroc']:.3f}" + (f" [{interval[0]:.2f}-{interval[1]:.2f}]" if interval
                                     else ""))
        check = row["calibration"]
        ece = "-" if row["ece"] is None else (
            f"{row['ece']:.3f}" + (f" ({check['expected_if_calibrated']:.3f})" if check else ""))
        levels = [row["levels"].get(level) for level in ("high", "medium", "low")]
        retrieval = row["retrieval"] or {}
        print(f"{row['set']:<28} {row['role']:<11} "
              f"{_share(row['correct'], row['n_with_key_facts']):>14} "
              f"{row['correct_with_more']:>6} {row['refused_with_facts_shown']:>5} "
              f"{_share(row['answered_out_of_scope'], row['n_out_of_scope']):>13} "
              f"{auroc:>19} {ece:>13} "
              + " ".join(f"{f'{lv[0]}/{lv[1]}' if lv else '-':>{w}}"
                         for lv, w in zip(levels, (6, 7, 6), strict=True))
              + f" {retrieval.get('hit_at_k') or '-':>6} {retrieval.get('mrr') or '-':>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="*", metavar="FILE",
                        help="print the per-set table; with names, only these sets (under "
                             "data/eval)")
    parser.add_argument("--book", action="append", metavar="NAME",
                        help="only this book (its folder name, e.g. d2l-book); repeatable")
    parser.add_argument("--role", choices=sorted(ROLES),
                        help="which sets to answer (default: development; all when --sets "
                             "names files)")
    parser.add_argument("--index-root", type=Path, default=INDEX_ROOT,
                        help=f"where each book's index is built or reused (default {INDEX_ROOT})")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    role = args.role or ("all" if args.sets else "development")
    report = measure(ROLES[role], role, set(args.book) if args.book else None,
                     set(args.sets) if args.sets else None, args.index_root)
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.sets is not None:
        print_sets(report)
    else:
        print_books(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
