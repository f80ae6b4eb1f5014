"""The tuning page's frames on the hand-built sweep of test_sweep, whose figures are worked out by
hand there; here they only have to be carried through unchanged and labelled."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from pages.components.tuning.view import (
    ANSWER_FIGURES,
    CURVES,
    NEIGHBOURS,
    answer_columns,
    answer_figures,
    current_figures,
    curves_frame,
    distribution_frame,
    fact_place_summary,
    figures_frame,
    gate_provenance,
    history_frame,
    level_frame,
    load_replay_rows,
    margin_frame,
    objective_args,
    objective_matrix,
    objective_title,
    outcome_frame,
    provenance,
    replay_filters,
    risk_coverage_frame,
)
from rag.audit.store import AuditStore
from rag.tuning.answers import AnswerOutcome
from rag.tuning.fact_places import CITED, FactPlace
from rag.tuning.recommend import recommend
from rag.tuning.replay import replay
from rag.tuning.sweep import build_arrays, run_sweep
from rag.types import RetrievalSettings
from tests.builders import HAND_BOOK, hand_set, make_response


@pytest.fixture(scope="module")
def result():
    questions, pools = hand_set()
    return run_sweep(build_arrays(questions, pools, top_k=2, book_sections=HAND_BOOK))


def test_objective_choice_maps_to_recommend_arguments():
    assert objective_args("max_f1", 5) == ("max_f1", None)
    assert objective_args("max_recall_at_far", 5) == ("max_recall_at_far", 0.05)
    assert objective_args("no such objective", 5) == ("max_f1", None)
    assert objective_title("max_recall_at_far", 0.05, 5) == \
        "Recall@5 where the false-answer rate ≤ 5 %"
    assert objective_title("max_f1", None, 5).startswith("F1")


def test_objective_matrix_hides_points_that_break_the_limit(result):
    f1 = objective_matrix(result, "max_f1", None)
    assert f1.shape == (21, 101)
    assert f1.loc[0.5, 0.48] == pytest.approx(result.at(0.5, 0.48)["f1"])
    limited = objective_matrix(result, "max_recall_at_far", 0.0)
    assert result.at(0.5, 0.48)["false_answer_rate"] == 0.5 and math.isnan(limited.loc[0.5, 0.48])
    assert limited.loc[1.0, 0.55] == pytest.approx(result.at(1.0, 0.55)["recall_at_k"])


def test_curves_and_distribution_frames(result):
    curves = curves_frame(result, 0.5)
    assert set(curves["metric"]) == set(CURVES.values()) and len(curves) == 4 * 101
    f1 = curves[curves["metric"] == "F1"].set_index("threshold")["value"]
    assert f1[0.48] == pytest.approx(result.at(0.5, 0.48)["f1"])
    dist = distribution_frame(result, 1.0)
    assert list(dist["scope"]) == ["in scope", "in scope", "out of scope", "out of scope"]
    assert list(dist["best_blended"]) == pytest.approx([0.9, 0.6, 0.3, 0.9])


def test_current_figures_are_exact_off_the_grid(result):
    figures = current_figures(result.arrays, 0.5, 0.485)
    assert figures["threshold"] == 0.485
    assert figures["answer_rate"] == pytest.approx(1.0)  # q2's b#2 at 0.5 still passes


def test_figures_and_margin_frames(result):
    rec = recommend(result, "max_f1", None, current=(0.85, 0.6))
    current = result.at(1.0, 0.55)
    frame = figures_frame({"current": current, "recommended": rec.metrics}).set_index("metric")
    assert frame.loc["F1", "recommended"] == rec.metrics["f1"]
    assert frame.loc["F1", "change"] == pytest.approx(rec.metrics["f1"] - current["f1"])
    assert frame.loc["Threshold", "current"] == 0.55
    margin = margin_frame(rec)
    assert len(margin) == 4
    for key, row in zip(NEIGHBOURS, margin.to_dict("records"), strict=True):
        point = rec.margin[key]
        if point is None:
            assert row["neighbour"].endswith("(off the grid)")
        else:
            assert f"({point['w_dense']:.2f} · {point['threshold']:.2f})" in row["neighbour"]
            assert row["drop"] == pytest.approx(rec.value - point["value"], abs=1e-4)


def test_outcomes_say_what_happened_to_each_question(result):
    table = outcome_frame(result, 1.0, 0.55)
    assert list(table["outcome"]) == ["answered", "answered", "refused (below threshold)",
                                      "refused (capability guardrail)"]
    assert list(table["scope"]) == ["in scope", "in scope", "out of scope", "out of scope"]
    assert list(table["correct"]) == [True, False, True, True]


def test_history_is_newest_first():
    data = {"history": [{"date": "2025-01-01", "w_dense": 0.8, "threshold": 0.3},
                        {"date": "2025-02-01", "w_dense": 0.9, "threshold": 0.35,
                         "previous_w_dense": 0.8}]}
    frame = history_frame(data)
    assert list(frame["date"]) == ["2025-02-01", "2025-01-01"]
    assert frame.iloc[0]["previous_w_dense"] == 0.8
    assert history_frame({}).empty


def test_provenance_says_when_the_point_was_moved_by_hand(result):
    rec = recommend(result, "max_f1", None)
    figures = result.at(rec.w_dense, rec.threshold)
    same = provenance("data/eval/q.yaml", rec, (rec.w_dense, rec.threshold), figures, "data/book",
                      today=dt.date(2025, 3, 1))
    assert same == {"question_set": "data/eval/q.yaml", "objective": "max_f1", "max_far": None,
                    "book": "data/book", "date": "2025-03-01", "f1": figures["f1"],
                    "recall_at_k": figures["recall_at_k"],
                    "false_answer_rate": figures["false_answer_rate"]}
    moved = provenance("q.yaml", rec, (rec.w_dense, 0.99), figures, "book")
    assert moved["objective"] == "max_f1, point chosen by hand"


def test_replay_rows_come_from_the_audit_store_with_their_pools(tmp_path):
    old = dt.datetime(2025, 3, 1, 12, tzinfo=dt.UTC)
    with AuditStore(tmp_path / "audit.duckdb") as store:
        store.record(make_response("An old question?", timestamp=old, seed=1))
        store.record(make_response("A recent question?", seed=2))
        store.flush()
        today = dt.datetime.now(dt.UTC).date()
        rows = load_replay_rows(store, replay_filters((today - dt.timedelta(days=1), today)))
        assert [r["user_query_text"] for r in rows] == ["A recent question?"]
        assert rows[0]["candidate_pool"]["candidates"] and "threshold" in rows[0]["settings"]
        everything = load_replay_rows(store, replay_filters(()), limit=1)
        assert len(everything) == 1
    result = replay(rows, RetrievalSettings(0.5, 1.0))
    assert list(result.rows["new_answered"]) == [False] and not result.skipped


def test_replay_filters_cover_whole_utc_days():
    f = replay_filters((dt.date(2025, 3, 1), dt.date(2025, 3, 2)))
    assert f.start == dt.datetime(2025, 3, 1, tzinfo=dt.UTC)
    assert f.end == dt.datetime(2025, 3, 3, tzinfo=dt.UTC)
    single = replay_filters((dt.date(2025, 3, 1),))
    assert single.end - single.start == dt.timedelta(days=1)


def hand_answers(result) -> list[AnswerOutcome]:
    """One outcome per question of hand_set: q1 right, q2 answered without its second fact, the
    bread question answered (a false answer), the code question refused."""
    q = [x.question for x in result.arrays.questions]
    return [AnswerOutcome(q[0], True, ("a",), "success", 0.9, "high", (True,), answer="A [S1]."),
            AnswerOutcome(q[1], True, ("b", "c"), "partial", 0.6, "low", (True, False),
                          fact_places=(FactPlace("c", CITED, "Blending"),)),
            AnswerOutcome(q[2], False, (), "success", 0.75, "medium"),
            AnswerOutcome(q[3], False, (), "refused", 0.3, "low")]


def test_answer_columns_sit_beside_the_retrieval_outcome(result):
    table = answer_columns(outcome_frame(result, 1.0, 0.55), hand_answers(result))
    assert list(table["correct"]) == [True, False, True, True]  # retrieval, unchanged
    assert list(table["answer_correct"]) == [True, False, False, False]
    assert list(table["missing_facts"]) == ["", "c", "", ""]
    assert list(table["fact_places"]) == ["", "c: in a cited section, not quoted (Blending)",
                                          "", ""]
    assert list(table["confidence"]) == [0.9, 0.6, 0.75, 0.3]
    assert table["answer"][0] == "A [S1]."
    unchecked = answer_columns(outcome_frame(result, 1.0, 0.55), None)
    assert unchecked["answer_correct"].isna().all() and set(unchecked["fact_places"]) == {""}
    with pytest.raises(ValueError):
        answer_columns(outcome_frame(result, 1.0, 0.55), hand_answers(result)[::-1])


def test_the_places_of_missing_facts_are_summed_over_wrong_answers(result):
    assert fact_place_summary(hand_answers(result)) == (
        "Where the book holds the key facts wrong or refused answers lack: 1 in a cited "
        "section, not quoted; 0 elsewhere in the evidence, not chosen; 0 in a section retrieval "
        "did not bring; 0 in no single unit of the book.")
    assert fact_place_summary(hand_answers(result)[:1]) == ""  # nothing is missing


def test_answer_figures_levels_and_risk_coverage_frames(result):
    answers = hand_answers(result)
    # accuracy 1/2; false answers 1/2; answered: .9 right, .6 wrong, .75 wrong
    figures = answer_figures(answers)
    assert figures["answer_accuracy"] == 0.5 and figures["answer_false_rate"] == 0.5
    assert figures["ece"] == pytest.approx((0.1 + 0.6 + 0.75) / 3, abs=1e-4)
    assert figures["auroc"] == 1.0
    levels = level_frame(answers).set_index("level")
    assert list(levels["count"]) == [1, 1, 2] and list(levels["answered"]) == [1, 1, 1]
    curve = risk_coverage_frame({"current": answers, "recommended": answers[:2]})
    assert list(curve["point"]) == ["current"] * 3 + ["recommended"] * 2
    assert list(curve["accuracy"][:3]) == pytest.approx([1 / 3, 1 / 2, 1.0])
    frame = figures_frame({"current": {"f1": 0.5, **figures},
                           "recommended": {"f1": 0.6, **figures}}).set_index("metric")
    assert frame.loc[ANSWER_FIGURES["answer_accuracy"], "recommended"] == 0.5
    retrieval_only = figures_frame({"current": {"f1": 0.5}, "recommended": {"f1": 0.6}})
    assert ANSWER_FIGURES["ece"] not in set(retrieval_only["metric"])


def test_gate_provenance_says_where_the_curve_was_measured():
    choice = {"target": 0.9, "gate": 0.71, "answer_rate": 0.81234, "accuracy": 0.9166666}
    assert gate_provenance("q.yaml", (0.95, 0.33), choice, "book", dt.date(2025, 5, 6)) == {
        "question_set": "q.yaml", "book": "book", "date": "2025-05-06", "gate_target": 0.9,
        "gate_point": "dense 0.95 · threshold 0.33", "gate_answer_rate": 0.8123,
        "gate_accuracy": 0.9167}
    none = gate_provenance("q.yaml", (0.95, 0.33), {**choice, "gate": None, "answer_rate": None,
                                                    "accuracy": None}, "book")
    assert (none["gate_answer_rate"], none["gate_accuracy"]) == (None, None)


def test_a_recommendation_equal_to_the_current_point_says_nothing_changes():
    """Issue 42: the sample book's recommendation, identical to the current settings, was shown
    as if it were a change."""
    from pages.components.tuning.results import is_current
    from rag.tuning.recommend import Recommendation

    rec = Recommendation("max_f1", None, 0.85, 0.6, 0.9, {}, {}, 3, True)
    assert is_current(rec, {"w_dense": 0.85, "threshold": 0.6})
    assert is_current(rec, {"w_dense": 0.8500001, "threshold": 0.6000001})
    assert not is_current(rec, {"w_dense": 0.8, "threshold": 0.6})
    assert not is_current(rec, {"w_dense": 0.85, "threshold": 0.55})
