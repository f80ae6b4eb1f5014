"""No point is recommended from labels that cannot tell settings apart (a set written for another
book, F1 0 everywhere), the CLI says why and applies nothing, and Apply's risk check names what
a point makes worse than the recommended one."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np

from rag.__main__ import main
from rag.config import PROJECT_ROOT
from rag.tuning.metrics import count_relevant
from rag.tuning.question_sets import save_question_set
from rag.tuning.questions import Question, load_questions
from rag.tuning.recommend import FAR_LIMIT, MIN_MATCHED_SHARE, apply_risks, recommend
from rag.tuning.sweep import METRICS, SweepResult, build_arrays, candidate_pass, run_sweep
from tests.builders import HAND_BOOK, SAMPLE_BOOK, hand_set

FOREIGN = PROJECT_ROOT / "data" / "eval" / "physical-ai.yaml"  # labelled for the shared book


def hand_result(questions: list[Question] | None = None) -> SweepResult:
    hand, pools = hand_set()
    return run_sweep(build_arrays(questions or hand, pools, top_k=2, book_sections=HAND_BOOK))


def test_a_set_written_for_another_book_is_refused_with_its_counts(sample_index,
                                                                   sample_settings):
    s = sample_settings
    questions = load_questions(FOREIGN)
    sections = sorted({c.section_ref for c in sample_index.chunks})
    pools = candidate_pass(sample_index, questions, s.candidate_pool)
    result = run_sweep(build_arrays(questions, pools, s.top_k, sections))
    rec = recommend(result, "max_f1", current=(s.w_dense, s.threshold))
    in_scope = [q for q in questions if q.in_scope]
    matched = [q for q in in_scope if count_relevant(q.expected_sections, sections)]
    assert len(matched) < MIN_MATCHED_SHARE * len(in_scope)  # the premise: another book's set
    assert (rec.n_in_scope, rec.n_matched) == (len(in_scope), len(matched))
    assert rec.refusal.startswith(f"Only {len(matched)} of the {len(in_scope)} in-scope "
                                  "questions name a section that exists in this book")
    assert "probably belongs to another book" in rec.refusal
    assert "Starter question set" in rec.refusal


def test_the_labels_of_this_book_are_not_refused():
    rec = recommend(hand_result(), "max_f1")
    assert (rec.refusal, rec.n_in_scope, rec.n_matched) == ("", 2, 2)
    assert rec.value > 0


def test_half_the_questions_matching_is_enough_and_fewer_is_not():
    hand, _ = hand_set()
    half = [hand[0], dataclasses.replace(hand[1], expected_sections=("zz#1",)), *hand[2:]]
    rec = recommend(hand_result(half), "max_f1")
    assert (rec.n_matched, rec.refusal) == (1, "")  # 1 of 2 = 50 %: at the floor, not below
    none = [dataclasses.replace(q, expected_sections=("zz",)) if q.in_scope else q for q in hand]
    refused = recommend(hand_result(none), "max_f1")
    assert refused.refusal.startswith("Only 0 of the 2 in-scope questions")


def test_f1_zero_everywhere_or_no_in_scope_question_is_refused():
    weights, thresholds = np.round(np.arange(21) * 0.05, 2), np.round(np.arange(101) * 0.01, 2)
    grids = {m: np.zeros((21, 101)) for m in METRICS}
    zero = SweepResult(weights, thresholds, None, np.zeros((21, 0, 5)), np.zeros((21, 0, 5)),
                       grids)
    assert "the best F1 is 0.000" in recommend(zero, "max_f1").refusal
    hand, _ = hand_set()
    outside = [dataclasses.replace(q, expected_sections=(), in_scope=False) for q in hand]
    assert "the best F1 is 0.000" in recommend(hand_result(outside), "max_f1").refusal


def test_apply_risks_name_what_gets_worse_and_the_limit():
    recommended = {"f1": 0.93, "recall_at_k": 0.9, "false_answer_rate": 0.0,
                   "answer_accuracy": 0.8}
    chosen = {"f1": 0.71, "recall_at_k": 0.9, "false_answer_rate": 0.44}
    assert apply_risks(chosen, recommended) == [
        "F1 0.71 vs 0.93 at the recommended point",
        "false-answer rate 0.44 vs 0.00 at the recommended point",
        f"false-answer rate 0.44 is above the limit of {FAR_LIMIT:.2f}"]
    # answer accuracy only when both points were checked; a 3rd-decimal difference shows 3
    assert apply_risks(chosen | {"answer_accuracy": 0.798, "f1": 0.93, "false_answer_rate": 0},
                       recommended) == ["answer accuracy 0.798 vs 0.800 at the recommended point"]
    assert apply_risks(recommended, recommended) == []
    assert apply_risks({"f1": 0.9299}, recommended) == []  # below display precision
    assert apply_risks({"false_answer_rate": 0.1}, {"false_answer_rate": 0.1}, 0.2) == []
    assert apply_risks({"false_answer_rate": 0.1}, {"false_answer_rate": 0.1}, 0.05) == [
        "false-answer rate 0.10 is above the limit of 0.05"]


def test_the_cli_reports_no_recommendation_and_applies_nothing(sample_index, sample_index_dir,
                                                               tmp_path, monkeypatch, capsys):
    foreign = [q for q in load_questions(FOREIGN) if q.in_scope][:4] + \
        [q for q in load_questions(FOREIGN) if not q.in_scope][:2]
    path = save_question_set(foreign, tmp_path / "foreign.yaml")
    settings_file = tmp_path / "settings.toml"
    shutil.copy(SAMPLE_BOOK.parent / "settings.toml", settings_file)
    monkeypatch.setenv("RAG_SETTINGS", str(settings_file))
    before = settings_file.read_text()
    args = ["eval", "questions", str(path), "--book", str(SAMPLE_BOOK), "--index",
            str(sample_index_dir)]
    assert main([*args, "--apply"]) == 2
    err = capsys.readouterr().err
    assert "Nothing applied. Only 0 of the 4 in-scope questions" in err
    assert settings_file.read_text() == before
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["recommended"] is None and report["refusal"].startswith("Only 0 of the 4")
    assert report["label_coverage"] == {"in_scope": 4, "matched": 0}
    assert list(report["answer_accuracy"]) == ["current"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "no recommendation: Only 0 of the 4" in text and "\nrecommended " not in text
