"""Per-type operating points: learned per category, adopted only when cross-validation on the
set shows held-out F1 gains, and never when one point does as well."""

from __future__ import annotations

import numpy as np

from rag.tuning.per_type import MIN_GAIN, cross_validate, f1_of, fit_points, folds_of
from rag.tuning.questions import Question
from tests.builders import hand_pool


def two_kinds(n: int = 10, conceptual_out: float = 0.7):
    """Factual questions are right at 0.5 and wrong ones reach 0.45; conceptual questions are
    right at 0.8 while out-of-scope "why" questions reach `conceptual_out`."""
    questions, pools = [], []
    for i in range(n):
        q = Question(f"What is part {i} of the robot?", (f"f#{i}",), True, "factual")
        questions.append(q)
        pools.append(hand_pool(q.question, [(f"f#{i}", 0.5, 0), ("x#1", 0.3, 0)], 1.0))
        q = Question(f"Why does joint {i} overheat?", (f"c#{i}",), True, "conceptual")
        questions.append(q)
        pools.append(hand_pool(q.question, [(f"c#{i}", 0.8, 0), ("x#1", 0.3, 0)], 1.0))
    for i in range(n // 2):
        q = Question(f"What is the capital of country {i}?", (), False, "off_topic")
        questions.append(q)
        pools.append(hand_pool(q.question, [("x#2", 0.45, 0)], 1.0))
        q = Question(f"Why do cats purr, case {i}?", (), False, "off_topic")
        questions.append(q)
        pools.append(hand_pool(q.question, [("x#3", conceptual_out, 0)], 1.0))
    return questions, pools


def test_each_type_gets_the_point_its_questions_need() -> None:
    questions, pools = two_kinds()
    single, points = fit_points(questions, pools, top_k=3, min_questions=5)
    # BM25 is 0 here, so a point (w, t) answers a question when w x dense >= t
    w, t = points["factual"]
    assert w * 0.45 < t <= w * 0.5  # answers every factual question, refuses "what is" probes
    w, t = points["conceptual"]
    assert w * 0.7 < t <= w * 0.8
    w, t = single
    assert not (w * 0.7 < t <= w * 0.5)  # no single point can do both


def test_per_type_points_are_adopted_when_they_win_held_out() -> None:
    questions, pools = two_kinds()
    report = cross_validate(questions, pools, top_k=3, folds=5, min_questions=4)
    assert report.per_type_f1 > report.single_f1 + MIN_GAIN
    assert report.adopt and "can be applied" in report.reason
    assert set(report.points) == {"factual", "conceptual"}
    assert report.counts["factual"] == report.counts["conceptual"] == 10


def test_one_point_is_kept_when_types_do_not_differ() -> None:
    # out-of-scope "why" questions now score like the factual ones: one threshold fits all
    questions, pools = two_kinds(conceptual_out=0.45)
    report = cross_validate(questions, pools, top_k=3, folds=5, min_questions=4)
    assert not report.adopt and report.gain < MIN_GAIN
    assert "one point is kept" in report.reason


def test_too_few_questions_per_type_means_one_point() -> None:
    questions, pools = two_kinds(n=4)
    report = cross_validate(questions, pools, top_k=3, folds=2, min_questions=8)
    assert not report.adopt and report.points == {}
    assert "8+ in-scope questions" in report.reason


def test_folds_are_stratified_and_reproducible() -> None:
    questions, _ = two_kinds()
    a, b = folds_of(questions, 5, seed=3), folds_of(questions, 5, seed=3)
    assert (a == b).all()
    for category in ("factual", "conceptual", "off_topic"):
        rows = [i for i, q in enumerate(questions) if q.category == category]
        assert sorted(np.bincount(a[rows], minlength=5)) in ([2] * 5, [1] * 5)


def test_f1_by_hand() -> None:
    questions, _ = two_kinds(n=2)
    answered = np.array([True, True, False, True, True, False])
    correct = np.array([True, False, False, True, False, True])
    # in scope: rows 0-3; tp = rows 0 and 3; answered 4 -> precision 2/4, recall 2/4
    assert f1_of(questions, answered, correct) == 0.5


def test_applied_per_type_points_are_what_the_app_reads(tmp_path) -> None:
    import shutil

    from rag.config import DEFAULT_SETTINGS_FILE, load_settings
    from rag.tuning.settings_writer import write_type_points

    path = tmp_path / "settings.toml"
    shutil.copy(DEFAULT_SETTINGS_FILE, path)
    before = load_settings(settings_file=path, env={})
    entry = write_type_points(path, {"comparison": {"w_dense": 0.7, "threshold": 0.45}},
                              "local", {"question_set": "q.yaml", "per_type_f1": 0.9})
    after = load_settings(settings_file=path, env={})
    assert after.retrieval_for("comparison").threshold == 0.45
    assert after.retrieval_for("factual") == before.retrieval  # the single point is kept
    assert entry["types"] == "comparison 0.70/0.45" and entry["previous_types"] == "none"
    assert after.w_terms == before.w_terms and after.threshold == before.threshold
