"""The tuning page through AppTest on the real pipeline and the sample book: its recommendation is
rag's, its question-set editor reports errors by line and keeps the edits, Apply writes a temp
copy of the settings file that load_settings reads back, replay lists the logged questions a
new threshold would change, and its answer checks and confidence gate are rag's too."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import pytest

from pages.components.tuning import saved
from rag.config import PROJECT_ROOT, load_settings
from rag.retrieval.hybrid import rank_candidates
from rag.tuning.evaluate import evaluate_set, gate_choice
from rag.tuning.question_sets import serialize_questions
from rag.tuning.questions import load_questions
from rag.tuning.recommend import FAR_LIMIT, apply_risks, recommend
from rag.tuning.runs import compare_figures, load_runs, runs_folder
from rag.tuning.sweep import build_arrays, candidate_pass, run_sweep
from rag.types import RetrievalSettings
from tests.builders import SAMPLE_QUESTIONS, ask, markdown_text, open_app

pytestmark = pytest.mark.slow
PAGE = "pages/tuning.py"
UPLOAD = "Upload a file…"
SMALL_SET = """questions:
  - question: "Why do most humanoids use absolute encoders rather than incremental ones?"
    expected_sections: ["proprioceptive-sensing#incremental-vs-absolute"]
    in_scope: true
    category: comparison
  - question: "Why does a humanoid's heading estimate drift even though it can measure gravity?"
    expected_sections: ["proprioceptive-sensing#imu-errors"]
    in_scope: true
  - question: "Who won the football World Cup in 1998?"
    in_scope: false
    category: off_topic
"""
ANSWER_SET = """questions:
  - {question: "If a camera image is stamped 50 ms late at 1 m/s, how far off do objects appear?",
     expected_sections: [sensing-intro#timing-sync], key_facts: ["5 cm"]}
  - {question: "What does an incremental encoder output?", expected_sections: [sensing-intro],
     key_facts: ["marmalade quantum zebra"]}
  - {question: "Who won the football World Cup in 1998?", in_scope: false}
"""
LOGGED = ("Why do most humanoids use absolute encoders rather than incremental ones?",
          "What does an incremental encoder output?")


def workspace(root: Path, questions: str | None = None) -> dict[str, str]:
    """A temp settings file (copy of data/settings.toml) and question-set folder for the app."""
    root.mkdir(parents=True, exist_ok=True)
    settings = root / "settings.toml"
    shutil.copy(Path(SAMPLE_QUESTIONS).parents[1] / "settings.toml", settings)
    eval_dir = root / "eval"
    eval_dir.mkdir(exist_ok=True)
    if questions is None:
        shutil.copy(SAMPLE_QUESTIONS, eval_dir / "questions.yaml")
    else:
        (eval_dir / "small.yaml").write_text(questions, encoding="utf-8")
    return {"RAG_SETTINGS": str(settings), "RAG_EVAL_DIR": str(eval_dir)}


def tuning(monkeypatch, index_dir, audit_db, env: dict[str, str]):
    at = open_app(monkeypatch, index_dir, audit_db, page=PAGE, **env)
    assert not at.exception, at.exception
    return at


def run_sweep_button(at, key: str = "tuning_run") -> None:
    next(b for b in at.button if b.key == key).click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def run_sweep_button_allowing_errors(at) -> None:
    next(b for b in at.button if b.key == "tuning_run").click().run()
    assert not at.exception, at.exception


def frame_with(at, *columns: str):
    return next(d.value for d in at.dataframe if set(columns) <= set(d.value.columns))


def figure(at, key: str) -> dict:
    return json.loads(next(c for c in at.get("plotly_chart") if key in c.proto.id).proto.spec)


@pytest.fixture(scope="module")
def swept(sample_settings, sample_index, tmp_path_factory):
    """The page on the sample set, swept once (the candidate pass is the slow part)."""
    env = workspace(tmp_path_factory.mktemp("tuning"))
    with pytest.MonkeyPatch.context() as mp:
        at = tuning(mp, sample_settings.index_dir,
                    tmp_path_factory.mktemp("tuning-audit") / "audit.duckdb", env)
        assert at.selectbox(key="tuning_set").value == "questions.yaml"
        assert len(at.data_editor[0].value) == len(load_questions(SAMPLE_QUESTIONS))
        assert not at.get("plotly_chart")
        run_sweep_button(at)
        yield at, env


@pytest.fixture(scope="module")
def direct(sample_settings, sample_index):
    """rag's own sweep of the sample set, for the same settings, index and pool size."""
    s = load_settings(env={}, index_dir=sample_settings.index_dir)
    questions = load_questions(SAMPLE_QUESTIONS)
    pools = candidate_pass(sample_index, questions, s.candidate_pool)
    sections = sorted({c.section_ref for c in sample_index.chunks})
    result = run_sweep(build_arrays(questions, pools, s.top_k, sections,
                                    s.retrieval.signal_weights))
    return s, result, dict(zip([q.question for q in questions], pools, strict=True))


def test_the_sweep_recommends_what_rag_recommends(swept, direct):
    at, _ = swept
    s, result, _ = direct
    rec = recommend(result, "max_f1", None, current=(s.w_dense, s.threshold))
    assert f"**Recommended: dense {rec.w_dense:.2f} · BM25 {1 - rec.w_dense:.2f} · threshold " \
           f"{rec.threshold:.2f}**" in markdown_text(at)
    figures = frame_with(at, "metric", "current", "recommended").set_index("metric")
    for label, key in (("F1", "f1"), ("Recall@k", "recall_at_k"), ("Hit@k", "hit_at_k"),
                       ("False-answer rate (out of scope)", "false_answer_rate")):
        assert figures.loc[label, "recommended"] == pytest.approx(rec.metrics[key])
    exact = run_sweep(result.arrays, [s.w_dense], [s.threshold]).at(s.w_dense, s.threshold)
    assert figures.loc["F1", "current"] == pytest.approx(exact["f1"])
    assert {m.label: m.value for m in at.metric}["F1"] == f"{rec.metrics['f1']:.3f}"
    heatmap = figure(at, "tuning_heatmap")
    star = next(t for t in heatmap["data"] if t.get("name", "").startswith("recommended"))
    assert (star["y"][0], star["x"][0]) == (rec.w_dense, rec.threshold)
    now = next(t for t in heatmap["data"] if t.get("name", "").startswith("current"))
    assert (now["y"][0], now["x"][0]) == (s.w_dense, s.threshold)
    curves = figure(at, "tuning_curves")
    assert {t["name"] for t in curves["data"]} == {"Answer rate (in scope)", "False-answer rate",
                                                   "Recall@k", "F1"}
    assert {round(shape["x0"], 2) for shape in curves["layout"]["shapes"]} == \
        {s.threshold, rec.threshold}
    assert {t["name"] for t in figure(at, "tuning_distribution")["data"]} >= {"in scope",
                                                                               "out of scope"}
    outcomes = frame_with(at, "question", "outcome", "correct")
    expected = result.question_table(rec.w_dense, rec.threshold)
    assert list(outcomes["question"]) == list(expected["question"])
    assert list(outcomes["correct"]) == list(expected["correct"])
    assert frame_with(at, "level", "cites_expected")["answered"].sum() == \
        int((expected["answered"] & expected["in_scope"]).sum())


def test_a_new_objective_only_redoes_the_arithmetic(swept, direct):
    at, _ = swept
    s, result, _ = direct
    pools = at.session_state["tuning_pools"]
    at.radio(key="tuning_objective").set_value("max_recall_at_far").run()
    at.slider(key="tuning_far").set_value(0).run()
    assert not at.exception, at.exception
    assert at.session_state["tuning_pools"] is pools and not at.get("progress")
    rec = recommend(result, "max_recall_at_far", 0.0, current=(s.w_dense, s.threshold))
    assert f"threshold {rec.threshold:.2f}**" in markdown_text(at)
    assert "false-answer rate ≤ 0 %" in markdown_text(at)
    at.radio(key="tuning_objective").set_value("max_f1").run()


def test_every_run_is_kept_downloads_and_two_compare(swept, direct):
    """The sweep and the objective changed above are two kept runs of this book; the page sets
    them side by side with rag's comparison, and offers the report and both CSVs."""
    at, _ = swept
    s, result, _ = direct
    assert [b.label for b in at.get("download_button")] == [
        "Report (HTML)", "Questions (CSV)", "Sweep grid (CSV)"]
    folder = runs_folder(load_settings())
    runs, unreadable = load_runs(folder)
    # F1, Recall@k under 5 % then 0 % false answers, F1 again: the same run, saved anew
    assert unreadable == 0 and len(runs) == 3
    assert [(r.objective, r.max_far) for r in runs] == [
        ("max_f1", None), ("max_recall_at_far", 0.0), ("max_recall_at_far", 0.05)]
    kept = frame_with(at, "saved", "set", "recommended")
    assert len(kept) == 3 and {Path(p).name for p in kept["set"]} == {"questions.yaml"}
    a, b = at.selectbox(key="tuning_run_a").value, at.selectbox(key="tuning_run_b").value
    assert (a, b) == (runs[1].id, runs[0].id)  # the newest on the right
    shown = frame_with(at, "metric", "a", "b", "change").set_index("metric")
    expected = compare_figures(runs[1], runs[0], "recommended", saved.LABELS).set_index("metric")
    assert shown["a"].to_dict() == pytest.approx(expected["a"].to_dict(), nan_ok=True)
    assert shown["b"].to_dict() == pytest.approx(expected["b"].to_dict(), nan_ok=True)
    rec = recommend(result, "max_f1", None, current=(s.w_dense, s.threshold))
    f1_run = next(r for r in runs if r.objective == "max_f1")
    assert f1_run.points["recommended"] == [rec.w_dense, rec.threshold]
    at.radio(key="tuning_runs_at").set_value("current").run()
    shown = frame_with(at, "metric", "a", "b", "change").set_index("metric")
    assert shown.loc["F1", "change"] == pytest.approx(0.0)  # same settings, same set
    assert not at.exception, at.exception


def test_a_selected_question_shows_its_candidates_and_opens_the_inspector(swept, direct):
    at, _ = swept
    s, result, pools = direct
    rec = recommend(result, "max_f1", None, current=(s.w_dense, s.threshold))
    at.session_state["tuning_questions"] = {"selection": {"rows": [1], "columns": [],
                                                          "cells": []}}
    at.run()
    question = frame_with(at, "question", "outcome")["question"][1]
    assert f"**Candidates for:** {question}" in markdown_text(at)
    table = frame_with(at, "chunk_id", "blended")
    ranked = rank_candidates(pools[question], RetrievalSettings(rec.w_dense, rec.threshold,
                                                                s.top_k, s.candidate_pool))
    assert list(table["chunk_id"]) == [h.chunk.chunk_id for h in ranked.candidates]
    next(b for b in at.button if b.key == "tuning_open_inspector").click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="inspector_question").value == question
    assert at.slider(key="insp_t").value == pytest.approx(rec.threshold)
    at.switch_page(PAGE).run()


def move_to(at, w: float, t: float) -> None:
    next(x for x in at.slider if x.key.startswith("tuning_w_")).set_value(w).run()
    next(x for x in at.slider if x.key.startswith("tuning_t_")).set_value(t).run()


def confirmation(at) -> str:
    return next((w.value for w in at.warning if "makes this worse" in w.value), "")


def test_stages_on_and_off_are_rags_and_per_type_points_need_a_gain(swept, direct,
                                                                     sample_index):
    at, _ = swept
    s, result, pools = direct
    from rag.tuning.per_type import cross_validate
    from rag.tuning.stages import stage_comparison

    table = frame_with(at, "variant", "hit_at_k", "false_answer_rate")
    rec = recommend(result, "max_f1", current=(s.w_dense, s.threshold))
    questions = load_questions(SAMPLE_QUESTIONS)
    point = RetrievalSettings(rec.w_dense, rec.threshold, s.top_k, s.candidate_pool,
                              w_terms=s.w_terms, rerank=s.rerank)
    want = stage_comparison(sample_index, questions, pools, point,
                            sorted({c.section_ref for c in sample_index.chunks}))
    assert [r["hit_at_k"] for r in want] == list(table["hit_at_k"])
    assert [r["f1"] for r in want] == list(table["f1"])
    assert list(table["variant"])[0] == "As set"
    next(b for b in at.button if b.key == "tuning_types_check").click().run()
    assert not at.exception, at.exception
    report = cross_validate(questions, [pools[q.question] for q in questions], s.top_k)
    shown = " ".join(m.value for m in [*at.success, *at.info])
    assert f"{report.per_type_f1:.3f}" in shown and f"{report.single_f1:.3f}" in shown
    assert any(b.key == "tuning_types_apply" for b in at.button) == report.adopt


def test_applying_a_worse_point_asks_first_and_cancel_writes_nothing(swept, direct):
    at, env = swept
    s, result, _ = direct
    rec = recommend(result, "max_f1", None, current=(s.w_dense, s.threshold))
    before = Path(env["RAG_SETTINGS"]).read_text(encoding="utf-8")
    move_to(at, rec.w_dense, 0.0)  # everything passes: out-of-scope questions get answered
    far = result.at(rec.w_dense, 0.0)["false_answer_rate"]
    assert far > FAR_LIMIT
    next(b for b in at.button if b.key == "tuning_apply").click().run()
    assert not at.exception, at.exception
    warning = confirmation(at)
    for risk in apply_risks(result.at(rec.w_dense, 0.0), rec.metrics, FAR_LIMIT):
        assert f"- {risk}" in warning
    assert (f"false-answer rate {far:.2f} vs {rec.metrics['false_answer_rate']:.2f} at the "
            "recommended point") in warning
    assert f"false-answer rate {far:.2f} is above the limit of 0.05" in warning
    assert any("the default target" in c.value for c in at.caption)
    assert Path(env["RAG_SETTINGS"]).read_text(encoding="utf-8") == before  # asked, not written
    next(b for b in at.button if b.key == "tuning_apply_cancel").click().run()
    assert not confirmation(at) and not at.success
    assert Path(env["RAG_SETTINGS"]).read_text(encoding="utf-8") == before


def test_apply_to_a_read_only_settings_file_is_a_message_and_writes_nothing(swept, direct):
    """Issue 43 (low): Apply replaced a read-only settings.toml (the rename ignores its mode)."""
    at, env = swept
    s, _, _ = direct
    path = Path(env["RAG_SETTINGS"])
    before = path.read_text(encoding="utf-8")
    path.chmod(0o444)
    try:
        move_to(at, *((0.8, 0.4) if (s.w_dense, s.threshold) != (0.8, 0.4) else (0.75, 0.45)))
        next(b for b in at.button if b.key == "tuning_apply").click().run()
        if confirmation(at):
            next(b for b in at.button if b.key == "tuning_apply_confirm").click().run()
        assert not at.exception, at.exception
        assert any("is read-only, so nothing was applied" in e.value for e in at.error), \
            [e.value for e in at.error]
        assert path.read_text(encoding="utf-8") == before and path.stat().st_mode & 0o777 == 0o444
        assert not path.with_name("settings.toml.tmp").exists()
    finally:
        path.chmod(0o644)


def test_apply_writes_the_settings_file_and_the_app_reads_it(swept, direct):
    at, env = swept
    s, result, _ = direct
    assert any("No questions were logged" in i.value for i in at.info)  # empty audit log
    # a point away from both the recommendation and the shipped setting, moved by hand
    w, t = (0.8, 0.4) if (s.w_dense, s.threshold) != (0.8, 0.4) else (0.75, 0.45)
    move_to(at, w, t)
    next(b for b in at.button if b.key == "tuning_apply").click().run()
    assert not at.exception, at.exception
    rec = recommend(result, "max_f1", None, current=(s.w_dense, s.threshold))
    if risks := apply_risks(result.at(w, t), rec.metrics, FAR_LIMIT):
        assert not at.success and all(f"- {r}" in confirmation(at) for r in risks)
        next(b for b in at.button if b.key == "tuning_apply_confirm").click().run()
        assert not at.exception, at.exception
    assert any(f"Applied dense {w:.2f} · threshold {t:.2f}" in m.value for m in at.success)
    path = Path(env["RAG_SETTINGS"])
    now = load_settings(env={"RAG_SETTINGS": str(path)})
    assert (now.w_dense, now.threshold) == (w, t)
    assert now.threshold_source.startswith("sweep over ")
    assert "(max_f1, point chosen by hand)" in now.threshold_source
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    entry = data["history"][-1]
    assert (entry["previous_w_dense"], entry["previous_threshold"]) == (s.w_dense, s.threshold)
    assert (entry["w_dense"], entry["threshold"]) == (w, t)
    assert entry["question_set"].endswith("questions.yaml")
    assert entry["f1"] == pytest.approx(result.at(w, t)["f1"])
    assert data["book"]["title"] == "Foundations of Physical AI"  # other keys kept
    assert "# Questions per minute per client" in path.read_text(encoding="utf-8")  # comments
    history = frame_with(at, "previous_w_dense", "previous_threshold")
    assert (history.iloc[0]["w_dense"], history.iloc[0]["threshold"]) == (w, t)
    assert any(f"Dense {w:.2f} · BM25 {1 - w:.2f} · threshold {t:.2f}" in c.value
               for c in at.sidebar.caption)  # the app re-read the file on the rerun


def test_an_invalid_upload_names_the_line(sample_settings, sample_index, monkeypatch, tmp_path):
    at = tuning(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb",
                workspace(tmp_path / "work", SMALL_SET))
    at.selectbox(key="tuning_set").set_value(UPLOAD).run()
    bad = SMALL_SET.replace('    expected_sections: ["proprioceptive-sensing#imu-errors"]\n', "")
    at.file_uploader(key="tuning_upload").upload("mine.yaml", bad.encode(), "text/yaml").run()
    assert not at.exception, at.exception
    assert any("mine.yaml, line 6: an in-scope question needs `expected_sections`" in e.value
               for e in at.error), [e.value for e in at.error]
    assert not any(b.key == "tuning_run" for b in at.button)
    at.file_uploader(key="tuning_upload").set_value(
        ("wide.csv", b"question,expected_sections\nWhat is an IMU?,a#b,extra\n", "text/csv")).run()
    assert any(e.value.startswith("wide.csv, line 2: more values than header columns")
               for e in at.error), [e.value for e in at.error]


def test_a_number_too_long_in_an_upload_is_a_message(sample_settings, sample_index, monkeypatch,
                                                    tmp_path):
    """Issue 43, item 10: a 5,000-digit `in_scope` raised ValueError through the page."""
    at = tuning(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb",
                workspace(tmp_path / "work", SMALL_SET))
    at.selectbox(key="tuning_set").set_value(UPLOAD).run()
    huge = SMALL_SET.replace("in_scope: false", "in_scope: " + "9" * 5000)
    at.file_uploader(key="tuning_upload").upload("huge.yaml", huge.encode(), "text/yaml").run()
    assert not at.exception, at.exception
    assert any("huge.yaml, line 10: a number with 5,000 digits" in e.value for e in at.error), \
        [e.value for e in at.error]


def test_edits_are_checked_by_row_kept_on_error_and_saved(sample_settings, sample_index,
                                                          monkeypatch, tmp_path):
    env = workspace(tmp_path / "work", SMALL_SET)
    at = tuning(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", env)
    editor = at.data_editor[0].key
    at.session_state[editor] = {"edited_rows": {1: {"expected_sections": ""}},
                                "added_rows": [], "deleted_rows": []}
    at.run()
    assert any("Edited table, line 2: an in-scope question needs `expected_sections`" in e.value
               for e in at.error), [e.value for e in at.error]
    next(b for b in at.button if b.label == "Save").click().run()
    assert any(e.value.startswith("Not saved:") for e in at.error)
    assert at.session_state[editor]["edited_rows"] == {1: {"expected_sections": ""}}
    assert Path(env["RAG_EVAL_DIR"], "small.yaml").read_text(encoding="utf-8") == SMALL_SET

    at.session_state[editor] = {"edited_rows": {1: {"in_scope": False, "expected_sections": ""}},
                                "added_rows": [{"question": "What is a rolling shutter?",
                                                "expected_sections": "exteroceptive-sensing"}],
                                "deleted_rows": []}
    at.run()
    assert not at.error, [e.value for e in at.error]
    at.text_input(key=f"{editor}_name").input("edited.csv")
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception, at.exception
    saved = load_questions(Path(env["RAG_EVAL_DIR"], "edited.csv"))
    assert [q.in_scope for q in saved] == [True, False, False, True]
    assert saved[3].expected_sections == ("exteroceptive-sensing",)
    assert at.selectbox(key="tuning_set").value == "edited.csv"
    assert any("Saved 4 questions" in m.value for m in at.success)


def test_replay_lists_logged_questions_a_new_threshold_changes(sample_settings, sample_index,
                                                               monkeypatch, tmp_path):
    env = workspace(tmp_path / "work", SMALL_SET)
    at = open_app(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", **env)
    for question in LOGGED:
        ask(at, question)
    at.switch_page(PAGE).run()
    run_sweep_button(at)
    threshold = next(s for s in at.slider if s.key.startswith("tuning_t_"))
    threshold.set_value(0.95).run()
    assert not at.exception, at.exception
    changed = frame_with(at, "question", "change", "old_answered")
    assert set(changed["question"]) == set(LOGGED)
    assert set(changed["change"]) == {"answered → refused"}
    metrics = {m.label: m.value for m in at.metric}
    assert (metrics["Replayed"], metrics["Answered → refused"]) == ("2", "2")


def test_a_busy_audit_database_is_a_clear_message(sample_settings, sample_index, monkeypatch,
                                                  held_audit_file, tmp_path):
    at = tuning(monkeypatch, sample_settings.index_dir, held_audit_file,
                workspace(tmp_path / "work", SMALL_SET))
    run_sweep_button(at)
    assert any("in use by another Folio process" in w.value and "spool" in w.value
               for w in at.warning), [w.value for w in at.warning]


def test_answers_and_the_gate_they_imply(sample_settings, sample_index, monkeypatch, tmp_path):
    env = workspace(tmp_path / "work", ANSWER_SET)
    at = tuning(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", env)
    run_sweep_button(at)
    run_sweep_button(at, "tuning_check_answers")
    s = sample_settings  # the same values as the page's copy of data/settings.toml
    ev = evaluate_set(sample_index, s, load_questions(Path(env["RAG_EVAL_DIR"], "small.yaml")))
    now, rec = ev.answer_report("current"), ev.answer_report("recommended")
    assert {m.label: m.value for m in at.metric}["Answer accuracy"] == f"{rec['accuracy']:.3f}"
    figures = frame_with(at, "metric", "current", "recommended").set_index("metric")
    assert figures.loc["Answer accuracy (key facts)", "current"] == pytest.approx(now["accuracy"])
    shown = frame_with(at, "level", "count")
    levels = shown[["level", "count", "answered", "correct"]]
    assert levels.to_dict("records") == [{k: r[k] for k in levels} for r in now["per_level"]]
    assert list(shown["interval"]) == [  # a level's accuracy on so few answers, roughly
        "—" if r["interval"] is None else f"{r['interval'][0]:.0%}–{r['interval'][1]:.0%}"
        for r in now["per_level"]]
    assert any(c.value.startswith("Current point. ECE ") and
               "an answerer right exactly as often as it says would score" in c.value
               for c in at.caption), [c.value for c in at.caption]
    table = frame_with(at, "question", "answer_correct", "missing_facts", "fact_places")
    assert list(table["answer_correct"]) == [q["correct"] for q in rec["questions"]]
    assert table["fact_places"][1] == "marmalade quantum zebra: in no single unit of the book"
    assert any(c.value.startswith("Current point. Where the book holds the key facts") and
               "1 in no single unit of the book" in c.value for c in at.caption)
    assert "current" in {t["name"] for t in figure(at, "tuning_risk_coverage")["data"]}
    at.slider(key="tuning_gate_target").set_value(0.0).run()
    chosen = gate_choice(ev.answers["current"], 0.0)
    gate, (low, high) = chosen["gate"], chosen["interval"]
    assert any(c.value.startswith(f"current: gate {gate:.3f} keeps ") and
               c.value.endswith(f"(95 % interval {low:.2f}–{high:.2f}).") for c in at.caption)
    next(b for b in at.button if b.key == "tuning_apply_gate").click().run()
    assert any(f"Applied confidence gate {gate:.3f}" in m.value for m in at.success)
    after = load_settings(env={"RAG_SETTINGS": env["RAG_SETTINGS"]})
    assert (after.gate_caveat, after.gate_answer) == (gate, max(s.gate_answer, gate))


def test_the_recommended_point_applies_without_asking(sample_settings, sample_index,
                                                      monkeypatch, tmp_path):
    env = workspace(tmp_path / "work", SMALL_SET)
    path = Path(env["RAG_SETTINGS"])
    path.write_text(path.read_text(encoding="utf-8").replace("w_dense = 0.95", "w_dense = 0.2"),
                    encoding="utf-8")  # far from any recommendation
    at = tuning(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", env)
    run_sweep_button(at)
    s = load_settings(env={"RAG_SETTINGS": str(path)}, index_dir=sample_settings.index_dir)
    ev = evaluate_set(sample_index, s, load_questions(Path(env["RAG_EVAL_DIR"], "small.yaml")),
                      answers=False)
    rec = ev.recommendation
    assert rec.w_dense != 0.2 and rec.metrics["false_answer_rate"] <= FAR_LIMIT  # premise
    next(b for b in at.button if b.key == "tuning_apply").click().run()
    assert not confirmation(at)
    assert any(f"Applied dense {rec.w_dense:.2f} · threshold {rec.threshold:.2f}" in m.value
               for m in at.success)


def test_a_set_for_another_book_gets_no_recommendation(sample_settings, sample_index,
                                                       monkeypatch, tmp_path):
    foreign = load_questions(PROJECT_ROOT / "data" / "eval" / "physical-ai.yaml")
    subset = [q for q in foreign if q.in_scope][:5] + [q for q in foreign if not q.in_scope][:2]
    env = workspace(tmp_path / "work", serialize_questions(subset, ".yaml"))
    at = tuning(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", env)
    assert at.selectbox(key="tuning_set").value == "Upload a file…"  # no other book's default
    at.selectbox(key="tuning_set").set_value("small.yaml").run()  # the reader picks it anyway
    run_sweep_button_allowing_errors(at)
    refusal = next(e.value for e in at.error if "No recommended setting" in e.value)
    assert "Only 0 of the 5 in-scope questions name a section that exists in this book" \
        in refusal and "Starter question set" in refusal
    assert any("expected section(s) match nothing in this book" in w.value for w in at.warning)
    assert "**Recommended:" not in markdown_text(at)
    assert not any(b.key in ("tuning_apply", "tuning_check_answers") for b in at.button)
    assert not at.get("plotly_chart")
    at.run()  # the next run opens the starter panel the refusal points to
    assert any(e.label == "Starter question set" and e.proto.expanded for e in at.expander)



def test_a_run_that_cannot_be_kept_is_a_notice_and_the_results_stay(sample_settings, monkeypatch,
                                                                    tmp_path):
    env = workspace(tmp_path / "work", SMALL_SET)
    (tmp_path / "tuning-runs").write_text("a file where the runs' folder would go")
    at = tuning(monkeypatch, sample_settings.index_dir, tmp_path / "audit.duckdb", env)
    run_sweep_button(at)
    assert any("This run could not be kept for later" in c.value for c in at.caption)
    assert "**Recommended: dense" in markdown_text(at)
    assert [b.label for b in at.get("download_button")][0] == "Report (HTML)"
    assert any(c.value.startswith("Every sweep you run is kept here") for c in at.caption)
