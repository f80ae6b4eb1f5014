"""Tuning runs kept on disk (rag.tuning.runs): a run holds the evaluation's own figures and
per-question outcomes, the same evaluation saved again replaces its file, the newest are kept,
a damaged file is skipped and counted, and two runs compare figure by figure and question by
question."""

from __future__ import annotations

import dataclasses
import json
import os

import pandas as pd
import pytest

from rag.tuning.evaluate import CURRENT, RECOMMENDED, evaluate_set
from rag.tuning.questions import load_questions
from rag.tuning.runs import (
    compare_figures,
    compare_questions,
    delete_run,
    load_runs,
    run_from_evaluation,
    runs_folder,
    save_run,
)
from tests.builders import SAMPLE_QUESTIONS

pytestmark = pytest.mark.slow
LABELS = {"f1": "F1", "recall_at_k": "Recall@k", "answer_accuracy": "Answer accuracy"}


@pytest.fixture(scope="module")
def subset():
    questions = load_questions(SAMPLE_QUESTIONS)
    return questions[:6] + [q for q in questions if not q.in_scope][:3]


@pytest.fixture(scope="module")
def evaluations(sample_index, sample_settings, subset):
    """The subset with its answers checked, and again under a strict false-answer limit."""
    checked = evaluate_set(sample_index, sample_settings, subset)
    strict = evaluate_set(sample_index, sample_settings, subset, objective="max_recall_at_far",
                          max_far=0.0, pools=checked.pools, answers=False)
    return checked, strict


def make_run(ev, objective="max_f1", max_far=None, now=None, set_hash="h1"):
    return run_from_evaluation(ev, question_set="subset.yaml", set_hash=set_hash, book="Sample",
                               book_id="sample-1", built_at="2026-11-29T10:00:00",
                               objective=objective, max_far=max_far, now=now)


def test_a_run_holds_the_evaluations_own_figures_and_outcomes(evaluations):
    ev, _ = evaluations
    run = make_run(ev)
    assert run.figures[CURRENT]["f1"] == pytest.approx(ev.current["f1"], abs=1e-4)
    assert run.figures[RECOMMENDED]["recall_at_k"] == pytest.approx(
        ev.recommendation.metrics["recall_at_k"], abs=1e-4)
    report = ev.answer_report(RECOMMENDED)
    assert run.figures[RECOMMENDED]["answer_accuracy"] == pytest.approx(report["accuracy"])
    assert run.points[RECOMMENDED] == [ev.recommendation.w_dense, ev.recommendation.threshold]
    table = ev.result.question_table(*ev.points[RECOMMENDED])
    assert [r["question"] for r in run.questions] == list(table["question"])
    assert [r[RECOMMENDED]["correct"] for r in run.questions] == list(table["correct"])
    outcomes = ev.answers[RECOMMENDED]
    assert [r[RECOMMENDED]["answer_correct"] for r in run.questions] == \
        [o.correct if o.judged else None for o in outcomes]
    assert [r[RECOMMENDED]["confidence"] for r in run.questions] == \
        [round(o.confidence, 4) for o in outcomes]
    assert run.answers_checked and "F1" in run.objective_text


def test_saving_again_replaces_and_the_newest_are_kept(evaluations, tmp_path):
    ev, strict = evaluations
    first = make_run(dataclasses.replace(ev, answers={}))
    path = save_run(tmp_path, first)
    again = make_run(ev)  # the same evaluation, its answers checked since
    assert again.id == first.id and save_run(tmp_path, again) == path
    runs, unreadable = load_runs(tmp_path)
    assert len(runs) == 1 and runs[0].answers_checked and unreadable == 0
    assert runs[0] == again  # every field survives the JSON round trip
    os.utime(path, (1e9, 1e9))
    for i in range(1, 4):  # written one after another: each older than the next
        written = save_run(tmp_path, make_run(strict, "max_recall_at_far", i / 100), keep=3)
        os.utime(written, (1e9 + i, 1e9 + i))
    assert {r.max_far for r in load_runs(tmp_path)[0]} == {0.01, 0.02, 0.03}
    save_run(tmp_path, make_run(strict, "max_recall_at_far", 0.5), keep=3)
    runs, _ = load_runs(tmp_path)
    assert len(runs) == 3 and {r.max_far for r in runs} == {0.02, 0.03, 0.5}


def test_a_damaged_or_foreign_file_is_skipped_and_counted(evaluations, tmp_path):
    ev, _ = evaluations
    save_run(tmp_path, make_run(ev))
    (tmp_path / "torn.json").write_text('{"format": 1, "id": "ab', encoding="utf-8")
    (tmp_path / "other.json").write_text(json.dumps({"format": 99}), encoding="utf-8")
    (tmp_path / "list.json").write_text("[1, 2]", encoding="utf-8")
    (tmp_path / "fields.json").write_text(json.dumps({"format": 1, "id": "x"}), encoding="utf-8")
    shapes = make_run(ev).to_dict() | {"points": []}  # every field there, one of the wrong shape
    (tmp_path / "shape.json").write_text(json.dumps(shapes), encoding="utf-8")
    rows = make_run(ev).to_dict() | {"questions": [{"asked": "?"}]}
    (tmp_path / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
    runs, unreadable = load_runs(tmp_path)
    assert len(runs) == 1 and unreadable == 6
    assert load_runs(tmp_path / "missing") == ([], 0)


def test_delete_takes_an_id_never_a_path(evaluations, tmp_path):
    ev, _ = evaluations
    folder = tmp_path / "runs"
    run = make_run(ev)
    save_run(folder, run)
    outside = tmp_path / "keep.json"
    outside.write_text("{}", encoding="utf-8")
    delete_run(folder, "../keep")
    assert outside.exists()
    delete_run(folder, run.id)
    assert load_runs(folder) == ([], 0)


def test_two_runs_compare_by_figure_and_by_question(evaluations):
    checked, strict = evaluations
    a = make_run(checked)
    b = make_run(strict, "max_recall_at_far", 0.0, set_hash="h2")
    figures = compare_figures(a, b, RECOMMENDED, LABELS).set_index("metric")
    assert figures.loc["F1", "a"] == a.figures[RECOMMENDED]["f1"]
    assert figures.loc["F1", "b"] == b.figures[RECOMMENDED]["f1"]
    assert figures.loc["F1", "change"] == pytest.approx(
        b.figures[RECOMMENDED]["f1"] - a.figures[RECOMMENDED]["f1"], abs=1e-4)
    assert pd.isna(figures.loc["Answer accuracy", "b"])  # b never checked its answers
    assert pd.isna(figures.loc["Answer accuracy", "change"])
    same = compare_questions(a, a, RECOMMENDED)
    assert same.empty
    changed = compare_questions(a, b, RECOMMENDED)
    moved = [r["question"] for r in a.questions
             if r[RECOMMENDED]["outcome"] != next(x for x in b.questions
                                                  if x["question"] == r["question"])
             [RECOMMENDED]["outcome"]]
    assert set(moved) <= set(changed["question"])
    shorter = dataclasses.replace(b, questions=b.questions[1:])
    only = compare_questions(a, shorter, CURRENT)
    assert only.set_index("question").loc[a.questions[0]["question"], "change"] == "only in A"
    pointless = dataclasses.replace(b, questions=[{k: v for k, v in r.items() if k != RECOMMENDED}
                                                  for r in b.questions])
    assert set(compare_questions(a, pointless, RECOMMENDED)["change"]) == {"no point in B"}


def test_runs_live_beside_the_audit_database_per_book(sample_settings):
    folder = runs_folder(sample_settings)
    assert folder.parent.parent == sample_settings.audit_db.parent
    assert folder.name == sample_settings.book_id
