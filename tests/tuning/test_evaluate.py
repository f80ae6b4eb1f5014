"""The one evaluation the CLI, the tuning page and the bench share: it equals the steps wired by
hand, reuses what it is given, reports answers consistently, and `eval questions` carries it
(JSON, text, and --apply writing the confidence gate with history)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tomllib
from pathlib import Path

import pytest

from rag.__main__ import main
from rag.commands.eval import print_report
from rag.config import load_settings
from rag.errors import ConfigError
from rag.tuning.answers import AnswerOutcome, answer_accuracy, summarise_answers
from rag.tuning.evaluate import (
    CURRENT,
    RECOMMENDED,
    answer_key,
    answer_report,
    evaluate_set,
    gate_choice,
)
from rag.tuning.questions import load_questions
from rag.tuning.recommend import recommend
from rag.tuning.settings_writer import write_gate, write_settings
from rag.tuning.sweep import build_arrays, candidate_pass, run_sweep
from tests.builders import SAMPLE_BOOK, SAMPLE_QUESTIONS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def subset():
    questions = load_questions(SAMPLE_QUESTIONS)
    return questions[:5] + [q for q in questions if not q.in_scope][:3]


@pytest.fixture(scope="module")
def evaluated(sample_index, sample_settings, subset):
    return evaluate_set(sample_index, sample_settings, subset)


def test_answer_key_ignores_labels_and_paths(sample_settings):
    s, point = sample_settings, (0.5, 0.4)
    relabelled = dataclasses.replace(s, threshold_source="by hand",
                                     settings_file=Path("/elsewhere.toml"))
    assert answer_key(relabelled, point) == answer_key(s, point)
    assert answer_key(s, point) != answer_key(s, (0.5, 0.41))
    assert answer_key(dataclasses.replace(s, gate_caveat=0.7), point) != answer_key(s, point)


def test_the_evaluation_equals_the_steps_wired_by_hand(evaluated, sample_index,
                                                       sample_settings, subset):
    s = sample_settings
    pools = candidate_pass(sample_index, subset, s.candidate_pool)
    sections = sorted({c.section_ref for c in sample_index.chunks})
    result = run_sweep(build_arrays(subset, pools, s.top_k, sections,
                                    s.retrieval.signal_weights))  # term match as the app
    rec = recommend(result, "max_f1", None, current=(s.w_dense, s.threshold))
    assert (evaluated.recommendation.w_dense, evaluated.recommendation.threshold) == \
        (rec.w_dense, rec.threshold)
    assert evaluated.recommendation.metrics == rec.metrics
    assert evaluated.current == run_sweep(result.arrays, [s.w_dense], [s.threshold]).at(
        s.w_dense, s.threshold)
    assert evaluated.points == {CURRENT: (s.w_dense, s.threshold),
                                RECOMMENDED: (rec.w_dense, rec.threshold)}
    assert evaluated.n_refused_by_capability == int(result.arrays.refused.sum())
    assert list(evaluated.pools) == [q.question for q in subset] and not evaluated.warnings
    for name in (CURRENT, RECOMMENDED):
        assert [o.question for o in evaluated.answers[name]] == [q.question for q in subset]


def test_given_pools_and_answers_are_reused(evaluated, sample_index, sample_settings, subset):
    again = evaluate_set(sample_index, sample_settings, subset, pools=evaluated.pools,
                         known_answers=evaluated.answer_cache())
    assert all(again.pools[q] is evaluated.pools[q] for q in again.pools)
    for name in (CURRENT, RECOMMENDED):
        assert all(a is b for a, b in zip(again.answers[name], evaluated.answers[name],
                                          strict=True))
    # at the recommended point the active settings' answers are the recommendation's
    rec = evaluated.recommendation
    moved = dataclasses.replace(sample_settings, w_dense=rec.w_dense, threshold=rec.threshold)
    there = evaluate_set(sample_index, moved, subset, pools=evaluated.pools,
                         known_answers=evaluated.answer_cache())
    assert all(a is b for a, b in zip(there.answers[CURRENT], evaluated.answers[RECOMMENDED],
                                      strict=True))
    bare = evaluate_set(sample_index, sample_settings, subset, pools=evaluated.pools,
                        answers=False)
    assert bare.answers == {} and bare.answer_cache() == {}


def test_answer_report_agrees_with_its_questions(evaluated):
    outcomes = evaluated.answers[CURRENT]
    report = evaluated.answer_report(CURRENT, gate_target=0.0)
    assert report["accuracy"] == pytest.approx(answer_accuracy(outcomes), abs=5e-5)
    graded = [q for q in report["questions"] if q["in_scope"] and q["correct"] is not None]
    assert report["n_with_key_facts"] == len(graded) == 5
    assert report["correct"] == sum(q["correct"] for q in graded)
    assert report["gate"]["gate"] == min(o.confidence for o in outcomes
                                         if o.answered or o.held_by_gate)
    assert "answer" not in report["questions"][0]


def test_gate_choice_reports_what_the_gate_keeps():
    def made(confidence: float, right: bool, in_scope: bool = True) -> AnswerOutcome:
        return AnswerOutcome(f"q{confidence}", in_scope, ("x",) if in_scope else (), "success",
                             confidence, "low", (right,) if in_scope else ())

    outcomes = [made(0.9, True), made(0.8, True), made(0.6, False), made(0.5, True, False)]
    # gates .5: 2/4 right; .6: 2/3; .8: 2/2; .9: 1/1
    assert gate_choice(outcomes, 0.6) == {"target": 0.6, "gate": 0.6, "answer_rate": 0.75,
                                          "accuracy": pytest.approx(2 / 3), "answered": 3,
                                          "interval": [0.2077, 0.9385]}  # 2 of 3, Wilson
    assert gate_choice(outcomes, 1.0)["interval"] == [0.3424, 1.0]  # 2 of 2
    assert gate_choice(outcomes, 1.0)["gate"] == 0.8
    report = answer_report(outcomes, (0.5, 0.3), gate_target=0.6, with_questions=False)
    assert report["gate"]["accuracy"] == 0.6667 and "questions" not in report
    assert report["accuracy"] == summarise_answers(outcomes)["accuracy"] == pytest.approx(2 / 3,
                                                                                        abs=1e-4)


def test_write_gate_keeps_history_and_never_inverts_the_bands(tmp_path):
    path = tmp_path / "settings.toml"
    shutil.copy(SAMPLE_BOOK.parent / "settings.toml", path)
    before = tomllib.loads(path.read_text())["embedders"]["local"]
    provenance = {"question_set": "data/eval/questions.yaml", "date": "2025-04-05",
                  "gate_target": 0.9, "gate_point": "dense 0.95 · threshold 0.33",
                  "gate_answer_rate": 0.8, "gate_accuracy": 0.91}
    assert before["gate_answer"] < 0.75  # the shipped gate_answer lies under the new gate
    entry = write_gate(path, 0.75, "local", provenance)
    after = tomllib.loads(path.read_text())
    local = after["embedders"]["local"]
    assert (local["gate_caveat"], local["gate_answer"]) == (0.75, 0.75)  # it rose to the gate
    assert local["threshold"] == before["threshold"] and local["source"] == before["source"]
    assert local["gate_source"] == ("gate for answer accuracy >= 0.9 over data/eval/questions.yaml"
                                    " at dense 0.95 · threshold 0.33, 2025-04-05, answer rate "
                                    "0.8, accuracy 0.91")
    assert entry == after["history"][-1]
    assert (entry["previous_gate_caveat"], entry["previous_gate_answer"]) == \
        (before["gate_caveat"], before["gate_answer"])
    assert entry["previous_gate_source"] == before["gate_source"]
    loaded = load_settings(env={"RAG_SETTINGS": str(path)})
    assert (loaded.gate_caveat, loaded.gate_answer) == (0.75, 0.75)
    write_settings(path, 0.9, 0.35, "local", {"question_set": "q.yaml"}, gate=0.55)
    local = tomllib.loads(path.read_text())["embedders"]["local"]
    assert (local["threshold"], local["gate_caveat"], local["gate_answer"]) == (0.35, 0.55, 0.75)
    with pytest.raises(ConfigError, match="between 0 and 1"):
        write_gate(path, 1.2, "local", provenance)


def test_cli_rejects_a_target_outside_0_1(capsys):
    assert main(["eval", "questions", str(SAMPLE_QUESTIONS), "--gate-target", "1.5"]) == 2
    assert "--gate-target 1.5 is an answer accuracy between 0 and 1" in capsys.readouterr().err


def test_cli_reports_answer_accuracy_and_applies_the_gate(sample_index, sample_index_dir,
                                                          tmp_path, monkeypatch, capsys):
    settings_file = tmp_path / "settings.toml"
    shutil.copy(SAMPLE_BOOK.parent / "settings.toml", settings_file)
    monkeypatch.setenv("RAG_SETTINGS", str(settings_file))
    before = tomllib.loads(settings_file.read_text())["embedders"]["local"]
    code = main(["eval", "questions", str(SAMPLE_QUESTIONS), "--book", str(SAMPLE_BOOK),
                 "--index", str(sample_index_dir), "--json", "--gate-target", "0", "--apply"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    questions = load_questions(SAMPLE_QUESTIONS)
    assert set(report["answer_accuracy"]) == {"current", "recommended"}
    for name, a in report["answer_accuracy"].items():
        assert {"accuracy", "false_answer_rate", "n_with_key_facts", "per_level", "ece", "auroc",
                "risk_coverage", "gate", "questions"} <= set(a)
        assert (a["w_dense"], a["threshold"]) == (report[name]["w_dense"],
                                                  report[name]["threshold"])
        for key in ("accuracy", "false_answer_rate", "ece", "auroc"):
            assert a[key] is None or 0 <= a[key] <= 1
        rows = a["questions"]
        assert [r["question"] for r in rows] == [q.question for q in questions]
        graded = [r for r, q in zip(rows, questions, strict=True) if q.in_scope and q.key_facts]
        assert a["n_with_key_facts"] == len(graded) == sum(bool(q.key_facts) for q in questions)
        assert all(r["correct"] == (r["answered"] and not r["missing_facts"]) for r in graded)
        assert a["accuracy"] == round(sum(r["correct"] for r in graded) / len(graded), 4)
        outside = [r for r in rows if not r["in_scope"]]
        assert a["false_answer_rate"] == round(sum(r["answered"] for r in outside)
                                               / len(outside), 4)
        judged = [r for r in rows if not r["in_scope"] or r["correct"] is not None]
        assert sum(row["count"] for row in a["per_level"]) == len(judged)
        for row in a["per_level"]:
            mine = [r for r in judged if r["level"] == row["level"]]
            assert row["answered"] == sum(r["answered"] for r in mine)
            assert row["correct"] == sum(bool(r["correct"]) for r in mine)
    gate = report["answer_accuracy"]["recommended"]["gate"]["gate"]
    written = tomllib.loads(settings_file.read_text())
    local = written["embedders"]["local"]
    assert local["gate_caveat"] == gate and report["applied"]["gate_caveat"] == gate
    assert local["gate_answer"] == max(before["gate_answer"], gate)
    assert written["history"][-1]["previous_gate_caveat"] == before["gate_caveat"]
    assert written["history"][-1]["gate_target"] == 0.0
    assert local["threshold"] == report["recommended"]["threshold"]
    print_report(report)
    text = capsys.readouterr().out
    current = report["answer_accuracy"]["current"]
    assert f"current      accuracy {current['accuracy']:.3f} ({current['correct']}/" \
           f"{current['n_with_key_facts']} with key facts" in text
    assert "gate for accuracy >= 0.0: " in text and "applied to" in text
    assert f"with confidence gate {gate}" in text
