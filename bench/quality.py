"""Answer quality on every labelled set of both books, in one table: the figures issue 11 asks
for (answers holding the book's key facts, false answers, how well confidence tells right from
wrong), with retrieval's beside them, at the current settings with the offline answerer.

    .venv/bin/python bench/quality.py            # every set found (the Physical AI sets need
                                                 # ../shared/data/physical-ai-book)
    .venv/bin/python bench/quality.py --json     # one JSON object: a row per set, pooled rows

Each set is marked development (its answers have been read, or a model or rule was fitted or
chosen on it) or held out (only its aggregates below have ever been looked at: the only honest
figure for questions Folio has not seen). Pooled rows sum the in-scope and out-of-scope counts
and compute AUROC and ECE over all the answers of that role. A row shows:
- right: in-scope answers holding every key fact; +more: the answer with the passages shown
  under it (more from the book) holds them; shown: refused, but the closest passages shown
  under the refusal hold them;
- false: out-of-scope questions answered (target <= 5 %);
- AUROC of the confidence for right vs wrong answers with its 95 % bootstrap interval, ECE with
  what an answerer right exactly as often as it says would score on the same answers
  (rag.tuning.uncertainty);
- right / answered per confidence level; hit@k and MRR of the sections retrieval selected.
Nothing here is asserted: it measures, as the other bench scripts do.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from bench.labelled_sets import BOOKS, DEVELOPMENT, EVAL, HELD_OUT  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.tuning.answers import AnswerOutcome, answer_pass, summarise_answers  # noqa: E402
from rag.tuning.evaluate import evaluation_pipeline  # noqa: E402
from rag.tuning.metrics import score_ranking  # noqa: E402
from rag.tuning.questions import Question, load_questions  # noqa: E402


def retrieval_figures(outcomes: list[AnswerOutcome], questions: list[Question],
                      top_k: int) -> dict[str, Any]:
    """Hit@k and MRR of the sections retrieval selected for the answers (AnswerOutcome.sections:
    no second retrieval), over in-scope questions with labels."""
    scores = [score_ranking(list(o.sections), q.expected_sections, top_k)
              for o, q in zip(outcomes, questions, strict=True)
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


def measure(sets: set[str] | None) -> dict[str, Any]:
    rows, pooled = [], {DEVELOPMENT: [], HELD_OUT: []}
    for book, question_sets in BOOKS:
        chosen = [(f, role) for f, role in question_sets.items() if (EVAL / f).exists()
                  and (sets is None or f in sets)]
        if not book.exists() or not chosen:
            continue
        settings = load_settings(book_dir=book, llm="extractive")
        index, _ = load_index(settings)
        pipeline = evaluation_pipeline(index, settings)
        for file, role in chosen:
            questions = load_questions(EVAL / file)
            outcomes = answer_pass(pipeline, questions, settings, settings.w_dense,
                                   settings.threshold)
            pooled[role] += outcomes
            rows.append(set_row(file, role, outcomes,
                                retrieval_figures(outcomes, questions, settings.top_k)))
    totals = [set_row(f"all {role}", role, outcomes, None)
              for role, outcomes in pooled.items() if outcomes]
    return {"sets": rows, "pooled": totals}


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole} ({part / whole:.2f})" if whole else "-"


def print_table(report: dict[str, Any]) -> None:
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
    parser.add_argument("--sets", nargs="+", metavar="FILE",
                        help="only these set files (names under data/eval)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    report = measure(set(args.sets) if args.sets else None)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
