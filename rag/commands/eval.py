"""`eval questions` (weight × threshold sweep on a labelled set, answer accuracy and the
confidence gate it implies) and `eval beir` (benchmark)."""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
from pathlib import Path
from typing import Any

from rag.commands.common import add_book_args, print_json, settings_from, terminal_progress
from rag.commands.starter import register as register_starter
from rag.config import PROJECT_ROOT
from rag.errors import InputError
from rag.index.load import load_index, store_for
from rag.providers.registry import get_embedder
from rag.tuning.beir import NDCG_AT, RECALL_AT, load_beir, open_beir_index, run_benchmark
from rag.tuning.evaluate import CURRENT, RECOMMENDED, evaluate_set
from rag.tuning.fact_places import describe_counts
from rag.tuning.questions import load_questions
from rag.tuning.recommend import OBJECTIVES
from rag.tuning.settings_writer import write_settings
from rag.tuning.uncertainty import describe_calibration

REPORTED = ("w_dense", "threshold", "hit_at_k", "recall_at_k", "mrr", "ndcg_at_k", "answer_rate",
            "false_answer_rate", "accuracy", "precision", "f1")
HEADERS = ("w_dense", "thresh", "Hit@k", "Rec@k", "MRR", "nDCG@k", "answer", "false-ans",
           "acc", "prec", "F1")


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("eval", help="tune and benchmark retrieval")
    commands = parser.add_subparsers(dest="eval_command", required=True)
    questions = commands.add_parser("questions", help="sweep weights × thresholds on a labelled "
                                    "question set and recommend an operating point")
    questions.add_argument("file", help="question set (.yaml, .yml or .csv)")
    add_book_args(questions)
    questions.add_argument("--objective", choices=OBJECTIVES, default="max_f1")
    questions.add_argument("--max-far", type=float, default=0.05, dest="max_far",
                           help="false-answer limit for max_recall_at_far (default 0.05)")
    questions.add_argument("--gate-target", type=float, dest="gate_target", metavar="ACC",
                           help="answer accuracy (0-1) the confidence gate must reach: reports "
                                "the lowest such gate; with --apply, writes it (gate_caveat)")
    questions.add_argument("--apply", action="store_true",
                           help="write the recommendation to the settings file, with history")
    questions.add_argument("--json", action="store_true")
    questions.set_defaults(func=run_questions)

    beir = commands.add_parser("beir", help="nDCG@10 / Recall@100 on a BEIR folder")
    beir.add_argument("dir", help="folder with corpus.jsonl, queries.jsonl and qrels/SPLIT.tsv")
    beir.add_argument("--split", default="test")
    beir.add_argument("--index", metavar="DIR", help="where the corpus index is cached "
                      "(default: data/index/beir)")
    beir.add_argument("--embedder", metavar="NAME", help="local or cohere")
    beir.add_argument("--dense-weight", type=float, dest="w_dense",
                      help="blend weight to report (default: the current w_dense)")
    beir.add_argument("--max-queries", type=int, dest="max_queries")
    beir.add_argument("--pool-size", type=int, default=300, dest="pool_size",
                      help="chunks per side (dense, BM25) in each candidate pool (default 300)")
    beir.add_argument("--json", action="store_true")
    beir.set_defaults(func=run_beir)
    register_starter(commands)


def _display_path(path: Path | str) -> str:
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def evaluate_questions(args: argparse.Namespace) -> dict[str, Any]:
    target = getattr(args, "gate_target", None)
    if target is not None and not 0 <= target <= 1:
        raise InputError(f"--gate-target {target} is an answer accuracy between 0 and 1 "
                         "(e.g. --gate-target 0.9).")
    settings = settings_from(args)
    path = Path(args.file)
    questions = load_questions(path)
    index, _ = load_index(settings, progress=terminal_progress)
    ev = evaluate_set(index, settings, questions, objective=args.objective, max_far=args.max_far,
                      progress=terminal_progress)
    result, rec = ev.result, ev.recommendation
    return {
        "question_set": _display_path(path), "book": _display_path(settings.book_dir),
        "embedder": settings.embedder, "top_k": settings.top_k,
        "candidate_pool": settings.candidate_pool, "n_questions": len(questions),
        "n_in_scope": result.n_in_scope, "n_out_of_scope": result.n_out_of_scope,
        "n_refused_by_capability": ev.n_refused_by_capability,
        "objective": rec.objective, "max_far": rec.max_far,
        "current": {k: ev.current[k] for k in REPORTED} | {"source": settings.threshold_source},
        "recommended": None if rec.refusal else {k: rec.metrics[k] for k in REPORTED},
        "refusal": rec.refusal or None,
        "label_coverage": {"in_scope": rec.n_in_scope, "matched": rec.n_matched},
        "objective_value": rec.value, "plateau_size": rec.plateau_size,
        "feasible": rec.feasible, "margin": rec.margin,
        "calibration": [{k: None if isinstance(v, float) and v != v else v for k, v in row.items()}
                        for row in ev.calibration().to_dict("records")],
        "answer_accuracy": {name: ev.answer_report(name, target)
                            for name in (CURRENT, RECOMMENDED)[:1 if rec.refusal else 2]},
        "gates": {"gate_answer": settings.gate_answer, "gate_caveat": settings.gate_caveat},
        "warnings": list(ev.warnings),
        "settings_file": str(settings.settings_file),
    }


def run_questions(args: argparse.Namespace) -> int:
    report = evaluate_questions(args)
    if args.apply and report["refusal"]:
        raise InputError(f"Nothing applied. {report['refusal']}")
    if args.apply:
        rec = report["recommended"]
        provenance = {"question_set": report["question_set"], "objective": report["objective"],
                      "max_far": report["max_far"], "book": report["book"],
                      "date": dt.date.today().isoformat(), "f1": rec["f1"],
                      "recall_at_k": rec["recall_at_k"],
                      "false_answer_rate": rec["false_answer_rate"]}
        gate = report["answer_accuracy"][RECOMMENDED].get("gate") or {}
        if gate.get("gate") is not None:
            provenance |= {"gate_target": gate["target"],
                           "gate_point": f"dense {rec['w_dense']:.2f} · threshold "
                                         f"{rec['threshold']:.2f}",
                           "gate_answer_rate": gate["answer_rate"],
                           "gate_accuracy": gate["accuracy"]}
        report["applied"] = write_settings(Path(report["settings_file"]), rec["w_dense"],
                                           rec["threshold"], report["embedder"], provenance,
                                           gate=gate.get("gate"))
    if args.json:
        print_json(report)
    else:
        print_report(report)
    return 0


def print_report(r: dict[str, Any]) -> None:
    print(f"{r['question_set']}: {r['n_questions']} questions ({r['n_in_scope']} in scope, "
          f"{r['n_out_of_scope']} out of scope; {r['n_refused_by_capability']} refused by the "
          f"capability guardrail) on {r['book']}, embedder {r['embedder']}, top_k {r['top_k']}")
    for warning in r["warnings"]:
        print(f"warning: {warning}")
    print(f"{'':12}" + " ".join(f"{h:>9}" for h in HEADERS))
    for label in ("current", "recommended")[:1 if r["refusal"] else 2]:
        print(f"{label:12}" + " ".join(f"{r[label][k]:9.3f}" if k not in ("w_dense", "threshold")
                                       else f"{r[label][k]:9.2f}" for k in REPORTED))
    if r["refusal"]:
        print(f"no recommendation: {r['refusal']}")
        print_answers(r)
        return
    far = f" with false-answer rate <= {r['max_far']}" if r["max_far"] is not None else ""
    note = "" if r["feasible"] else " (no point meets the limit: lowest false-answer rate shown)"
    print(f"objective {r['objective']}{far}: {r['objective_value']:.4f}; {r['plateau_size']} grid "
          f"points tie, the one deepest inside that plateau is recommended{note}")
    drops = [f"{name} {v['drop']:+.3f}" for name, v in r["margin"].items()
             if isinstance(v, dict)]
    print(f"margin (objective drop at the neighbours): {', '.join(drops)}")
    print("calibration at the recommended point (answered in-scope questions by confidence):")
    for row in r["calibration"]:
        rate = "-" if row["rate"] is None else f"{row['rate']:.0%}"
        print(f"  {row['level']:<7} {row['answered']:>4} answered, {row['cites_expected']:>4} cite "
              f"an expected section ({rate}); {row['false_answers']} out-of-scope answered")
    print_answers(r)
    if "applied" in r:
        gate = r["applied"].get("gate_caveat")
        print(f"applied to {r['settings_file']}" + (f" with confidence gate {gate}" if gate
                                                    is not None else "")
              + " (previous values kept under [[history]])")
    else:
        print("apply with --apply (writes the settings file, keeping the previous values)")


def _figure(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None else format(value, spec)


def _interval(pair: list[float]) -> str:
    return f"{pair[0]:.0%}-{pair[1]:.0%}"


def print_answers(r: dict[str, Any]) -> None:
    """Answer accuracy (key facts) at both points, the per-level table, ECE, AUROC, the gate."""
    print("answers (offline answerer; correct = answered and every key fact present):")
    now = r["answer_accuracy"][CURRENT]
    for name, a in r["answer_accuracy"].items():
        if name == RECOMMENDED and (a["w_dense"], a["threshold"]) == (now["w_dense"],
                                                                       now["threshold"]):
            print(f"  {name:<12} the same point as current: the same answers")
            continue
        print(f"  {name:<12} accuracy {_figure(a['accuracy'])} ({a['correct']}/"
              f"{a['n_with_key_facts']} with key facts, {a['n_without_key_facts']} without: "
              f"retrieval only), false-answer rate {_figure(a['false_answer_rate'])}, "
              f"ECE {_figure(a['ece'])}, AUROC {_figure(a['auroc'])}, "
              f"{_figure(a['mean_latency_ms'], '.0f')} ms a question")
        if a.get("calibration"):
            print(f"    {describe_calibration(a['ece'], a['calibration'])}")
        if a.get("auroc_interval"):
            lo, hi = a["auroc_interval"]
            print(f"    AUROC 95% interval {lo:.2f}-{hi:.2f} (bootstrap over these answers)")
        if a.get("accuracy_with_more") is not None:
            print(f"    with the passages shown under each answer (more from the book): "
                  f"{_figure(a['accuracy_with_more'])} ({a['correct_with_more']}/"
                  f"{a['n_with_key_facts']}) hold every key fact")
        if a.get("refused_with_facts_shown"):
            print(f"    refused, but the closest passages shown under the refusal hold every "
                  f"key fact: {a['refused_with_facts_shown']}")
        for row in a["per_level"]:
            span = f", 95% interval {_interval(row['interval'])}" if row.get("interval") else ""
            print(f"    {row['level']:<7} {row['count']:>4} questions, {row['answered']:>4} "
                  f"answered, {row['correct']:>4} correct ({_figure(row['accuracy'], '.0%')}"
                  f"{span})")
        places = a.get("missing_fact_places") or {}
        if sum(places.values()):
            print(f"    where the book holds what wrong answers lack: {describe_counts(places)}")
        if "gate" in a:
            g = a["gate"]
            print(f"    gate for accuracy >= {g['target']}: " + (
                "none reaches it" if g["gate"] is None else
                f"{g['gate']:.4f} (answers {_figure(g['answer_rate'], '.0%')} of judged "
                f"questions at accuracy {_figure(g['accuracy'])}, 95% interval "
                f"{_interval(g['interval'])})"))
    print(f"  active gates: answer >= {r['gates']['gate_answer']}, caveat >= "
          f"{r['gates']['gate_caveat']}, refuse below")


def run_beir(args: argparse.Namespace) -> int:
    settings = settings_from(args)
    if not args.index:
        settings = dataclasses.replace(settings, index_dir=Path(settings.index_dir) / "beir")
    data = load_beir(Path(args.dir), args.split)
    index = open_beir_index(data, settings.index_dir, get_embedder(settings),
                            store_for(settings), progress=terminal_progress)
    weight = settings.w_dense if args.w_dense is None else args.w_dense
    result = run_benchmark(data, index, weight, args.max_queries, args.pool_size,
                           progress=terminal_progress)
    report = result.to_dict()
    if args.json:
        print_json(report)
        return 0
    print(f"{data.name} ({args.split}): {report['queries']} queries, {len(data.corpus)} "
          f"documents, {len(index.chunks)} chunks, {report['seconds']} s")
    print(f"{'':28}{'nDCG@' + str(NDCG_AT):>10}{'Recall@' + str(RECALL_AT):>12}")
    labels = {"dense": "dense only", "bm25": "BM25 only",
              "blended": f"blended (w_dense {weight:g})",
              "blended_best": f"blended, best on split ({report['best_w_dense']:g})"}
    for key, label in labels.items():
        print(f"{label:28}{report[f'ndcg@{NDCG_AT}'][key]:>10.4f}"
              f"{report[f'recall@{RECALL_AT}'][key]:>12.4f}")
    return 0
