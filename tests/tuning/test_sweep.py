"""The vectorised sweep against hand-computed values and brute-force rank_candidates; the
recommendation, its margin, calibration and writing the chosen settings."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pytest

from rag.errors import ConfigError
from rag.retrieval.hybrid import rank_candidates
from rag.tuning.metrics import count_relevant, score_ranking
from rag.tuning.questions import load_questions
from rag.tuning.recommend import calibrate, plateau_centre, recommend
from rag.tuning.settings_writer import write_settings
from rag.tuning.sweep import METRICS, SweepResult, build_arrays, candidate_pass, run_sweep
from rag.types import RetrievalSettings
from tests.builders import HAND_BOOK, SAMPLE_BOOK, SAMPLE_QUESTIONS, hand_set

L2, L3 = 1 / math.log2(3), 1 / math.log2(4)


@pytest.fixture(scope="module")
def hand_result() -> SweepResult:
    questions, pools = hand_set()
    return run_sweep(build_arrays(questions, pools, top_k=2, book_sections=HAND_BOOK))


def test_metrics_on_hand_built_pools(hand_result):
    # w=1, t=0.55: q1 selects a#1, a#2 (relevant at rank 2); q2 selects a#3 only (b#2 = 0.5
    # fails); the bread question is refused (0.3); the code request is refused by the guardrail.
    assert hand_result.at(1.0, 0.55) == pytest.approx({
        "w_dense": 1.0, "threshold": 0.55, "hit_at_k": 0.5, "recall_at_k": 0.5, "mrr": 0.25,
        "ndcg_at_k": round(L2 / 2, 4), "answer_rate": 1.0, "false_answer_rate": 0.0,
        "accuracy": 0.75, "precision": 0.5, "f1": 0.5})
    # w=0.5, t=0.48: q1's best chunk of a#2 is its second one (0.75); q2 selects b#2 (0.5) of
    # chapter b, which has two sections in the book; the bread question now passes (0.65).
    assert hand_result.at(0.5, 0.48) == pytest.approx({
        "w_dense": 0.5, "threshold": 0.48, "hit_at_k": 1.0, "recall_at_k": 1.0, "mrr": 1.0,
        "ndcg_at_k": round((1 + 1 / (1 + L2)) / 2, 4), "answer_rate": 1.0,
        "false_answer_rate": 0.5, "accuracy": 0.75, "precision": round(2 / 3, 4),
        "f1": 0.8})


def test_result_frames(hand_result):
    frame = hand_result.to_frame()
    assert len(frame) == 21 * 101 * len(METRICS)
    assert set(frame.columns) == {"w_dense", "threshold", "metric", "value"}
    curves = hand_result.curves_at(0.5)
    assert list(curves["threshold"][:3]) == [0.0, 0.01, 0.02] and "f1" in curves
    table = hand_result.question_table(1.0, 0.55)
    assert list(table["top_section"]) == ["a#1", "a#3", "a#1", "a#1"]
    assert list(table["answered"]) == [True, True, False, False]
    assert list(table["refused_by"]) == ["", "", "threshold", "capability"]
    assert list(table["correct"]) == [True, False, True, True]
    assert list(table["selected"])[:2] == ["a#1, a#2", "a#3"]
    dist = hand_result.score_distribution(1.0)
    assert list(dist["best_blended"]) == pytest.approx([0.9, 0.6, 0.3, 0.9])
    with pytest.raises(ConfigError, match="not on the sweep's grid"):
        hand_result.at(0.33, 0.5)


@pytest.fixture(scope="module")
def sample_pools(sample_index):
    questions = load_questions(SAMPLE_QUESTIONS)
    return questions, candidate_pass(sample_index, questions, 50)


def test_sweep_equals_brute_force_rank_candidates(sample_index, sample_pools):
    questions, pools = sample_pools
    sections = sorted({c.section_ref for c in sample_index.chunks})
    result = run_sweep(build_arrays(questions, pools, 5, sections))
    rng = np.random.default_rng(7)
    settings = [(float(rng.choice(result.weights)), float(rng.choice(result.thresholds)))
                for _ in range(6)] + [(0.0, 0.0), (1.0, 0.3)]
    for w, t in settings:
        table = result.question_table(w, t)
        scored = []
        for i, (q, p) in enumerate(zip(questions, pools, strict=True)):
            hits = rank_candidates(p, RetrievalSettings(w, t, 5)).hits
            refs = [h.chunk.section_ref for h in hits]
            assert table["selected"][i] == ", ".join(refs)
            assert table["answered"][i] == (bool(hits) and table["refused_by"][i] != "capability")
            if q.in_scope:
                scored.append(score_ranking(refs, q.expected_sections, 5,
                                            count_relevant(q.expected_sections, sections)))
        got = result.at(w, t)
        for ours, theirs in (("hit", "hit_at_k"), ("recall", "recall_at_k"), ("rr", "mrr"),
                             ("ndcg", "ndcg_at_k")):
            assert got[theirs] == pytest.approx(np.mean([s[ours] for s in scored]), abs=1e-4)


@pytest.mark.parametrize("w_terms", [0.1, 0.3])
def test_sweep_with_term_match_equals_rank_candidates(sample_index, sample_pools, w_terms):
    """The composite signals are blended in at every grid point exactly as the app does."""
    questions, pools = sample_pools
    result = run_sweep(build_arrays(questions, pools, 5, signal_weights={"terms": w_terms}))
    for w, t in ((0.95, 0.33), (0.5, 0.2), (1.0, 0.45)):
        table = result.question_table(w, t)
        for i, p in enumerate(pools):
            hits = rank_candidates(p, RetrievalSettings(w, t, 5, w_terms=w_terms)).hits
            assert table["selected"][i] == ", ".join(h.chunk.section_ref for h in hits)
    plain = run_sweep(build_arrays(questions, pools, 5))
    assert not np.array_equal(plain.scores, result.scores)


def test_sweep_covers_the_whole_grid_for_every_question(sample_index, sample_pools):
    """Its speed is measured in bench/tuning.py, not asserted here."""
    questions, pools = sample_pools
    result = run_sweep(build_arrays(questions, pools, 5))
    assert result.grids["f1"].shape == (21, 101)
    assert result.n_in_scope + result.n_out_of_scope == len(questions)


def grid_result(grids: dict[str, np.ndarray]) -> SweepResult:
    weights, thresholds = np.round(np.arange(21) * 0.05, 2), np.round(np.arange(101) * 0.01, 2)
    full = {m: grids.get(m, np.zeros((21, 101))) for m in METRICS}
    return SweepResult(weights, thresholds, None, np.zeros((21, 0, 5)), np.zeros((21, 0, 5)),
                       full)


def test_recommendation_picks_the_middle_of_the_plateau_then_the_current_point():
    f1 = np.full((21, 101), 0.5)
    f1[12:19, 30:51] = 0.9  # w 0.60-0.90 x t 0.30-0.50
    result = grid_result({"f1": f1})
    rec = recommend(result, "max_f1", current=(0.85, 0.60))
    # t=0.40 is 0.11 from both edges; w 0.70-0.80 are all at least that far from theirs.
    assert (rec.w_dense, rec.threshold, rec.value, rec.plateau_size) == (0.8, 0.4, 0.9, 147)
    assert recommend(result, "max_f1", current=(0.6, 0.3)).w_dense == 0.7
    assert rec.margin["worst_drop"] == 0.0 and rec.margin["t+0.05"]["drop"] == 0.0
    at_edge = np.full((21, 101), 0.5)
    at_edge[16:, 30:51] = 0.9  # w 0.80-1.00: the grid's edge at w=1 is not a drop
    edge = recommend(grid_result({"f1": at_edge}), "max_f1", current=(0.6, 0.3))
    assert (edge.w_dense, edge.threshold) == (0.9, 0.4)


def test_margin_reports_drops_around_the_point():
    thresholds = np.round(np.arange(101) * 0.01, 2)
    f1 = np.tile(1 - np.abs(thresholds - 0.42), (21, 1))
    f1[10] += 0.01  # w = 0.50 is best
    rec = recommend(grid_result({"f1": f1}), "max_f1")
    assert (rec.w_dense, rec.threshold) == (0.5, 0.42)
    assert rec.margin["w-0.05"]["drop"] == pytest.approx(0.01)
    assert rec.margin["t-0.05"]["drop"] == pytest.approx(0.05)
    assert rec.margin["t+0.05"]["drop"] == pytest.approx(0.05)
    assert rec.margin["worst_drop"] == pytest.approx(0.05)
    assert rec.plateau_size == 1


def test_recommendation_under_a_false_answer_limit():
    thresholds = np.round(np.arange(101) * 0.01, 2)
    recall = np.tile(1 - thresholds, (21, 1))
    far = np.tile(np.where(thresholds < 0.3, 0.25, 0.0), (21, 1))
    result = grid_result({"recall_at_k": recall, "false_answer_rate": far})
    rec = recommend(result, "max_recall_at_far", max_far=0.05, current=(0.85, 0.6))
    assert (rec.w_dense, rec.threshold, rec.value, rec.feasible) == (0.85, 0.3, 0.7, True)
    assert rec.margin["t-0.05"]["feasible"] is False and not rec.margin["all_feasible"]
    assert rec.margin["t+0.05"]["drop"] == pytest.approx(0.05)
    loose = recommend(result, "max_recall_at_far", max_far=0.3)
    assert loose.threshold == 0.0 and loose.value == 1.0
    strict = recommend(grid_result({"recall_at_k": recall, "false_answer_rate": far + 0.1}),
                       "max_recall_at_far", max_far=0.05)
    assert strict.feasible is False and strict.threshold == 0.3  # the lowest false-answer rate
    with pytest.raises(ConfigError, match="max_f1, max_recall_at_far"):
        recommend(result, "max_accuracy")
    with pytest.raises(ConfigError, match="false-answer limit"):
        recommend(result, "max_recall_at_far", max_far=None)


def test_plateau_centre_without_any_drop_takes_the_current_point():
    plateau = np.ones((21, 101), dtype=bool)
    weights, thresholds = np.round(np.arange(21) * 0.05, 2), np.round(np.arange(101) * 0.01, 2)
    assert plateau_centre(plateau, weights, thresholds, (0.85, 0.6)) == (17, 60)


def test_calibration_table(hand_result):
    # At w=1, t=0.55: q1 (best 0.9 -> confidence 0.86, high) cites a#2; q2 (best 0.6 ->
    # 0.68, low) cites nothing from chapter b.
    table = calibrate(hand_result, 1.0, 0.55)
    assert list(table["level"]) == ["high", "medium", "low"]
    assert list(table["answered"]) == [1, 0, 1]
    assert list(table["cites_expected"]) == [1, 0, 0]
    assert table["rate"][0] == 1.0 and table["rate"][2] == 0.0
    # w=0.5, t=0.48: the bread question is answered at 0.65 -> confidence 0.71, medium.
    assert list(calibrate(hand_result, 0.5, 0.48)["false_answers"]) == [0, 1, 0]


def test_write_settings_keeps_keys_and_appends_history(tmp_path):
    path = tmp_path / "settings.toml"
    path.write_text((SAMPLE_BOOK.parent / "settings.toml").read_text())
    before = tomllib.loads(path.read_text())
    provenance = {"question_set": "data/eval/questions.yaml", "objective": "max_f1",
                  "date": "2025-01-02", "f1": 0.97, "max_far": None}
    entry = write_settings(path, 0.9, 0.37, "local", provenance)
    after = tomllib.loads(path.read_text())
    assert after["retrieval"] == {**before["retrieval"], "w_dense": 0.9}
    assert after["embedders"]["local"]["threshold"] == 0.37
    assert after["embedders"]["local"]["source"] == \
        "sweep over data/eval/questions.yaml (max_f1), 2025-01-02, f1 0.97"
    assert after["embedders"]["cohere"] == before["embedders"]["cohere"]
    for table in ("book", "answer", "guardrails", "budget", "chat"):
        assert after[table] == before[table]
    assert after["history"][:-1] == before.get("history", [])
    assert entry == after["history"][-1]
    assert entry["previous_threshold"] == before["embedders"]["local"]["threshold"]
    assert entry["previous_w_dense"] == before["retrieval"]["w_dense"]
    assert path.read_text().startswith("# Folio settings.")
    write_settings(path, 0.8, 0.4, "local", {**provenance, "date": "2025-02-03"})
    history = tomllib.loads(path.read_text())["history"]
    assert [h["previous_threshold"] for h in history[-2:]] == [
        before["embedders"]["local"]["threshold"], 0.37]
    with pytest.raises(ConfigError):
        write_settings(path, 1.2, 0.4, "local", provenance)


def test_sweep_moves_numbered_parts_as_rank_candidates_does() -> None:
    """A question naming "Module 2" moves each candidate by its part score at every grid point,
    exactly as the app ranks it (rag.retrieval.parts)."""
    import dataclasses

    from tests.builders import hand_set

    questions, pools = hand_set()
    moves = [np.array([-1.0, 1.0, 1.0, -0.5], np.float32), np.array([0.0, -1.0, 1.0], np.float32),
             np.zeros(1, np.float32), np.zeros(1, np.float32)]
    moved = [dataclasses.replace(p, signals={"part": m}) for p, m in zip(pools, moves,
                                                                         strict=True)]
    result = run_sweep(build_arrays(questions, moved, 2))
    plain = run_sweep(build_arrays(questions, pools, 2))
    assert not np.array_equal(plain.scores, result.scores)
    for w, t in ((0.95, 0.33), (0.5, 0.2), (0.0, 0.1), (1.0, 0.6)):
        table = result.question_table(w, t)
        for i, p in enumerate(moved):
            hits = rank_candidates(p, RetrievalSettings(w, t, 2)).hits
            assert table["selected"][i] == ", ".join(h.chunk.section_ref for h in hits)
