"""How far the answer metrics of a small labelled set can be trusted: an ECE against what a
calibrated answerer scores on the same answers, a bootstrap interval for the AUROC and a Wilson
interval for a level's accuracy (pure arithmetic, checked against exact values)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rag.tuning.uncertainty import (
    auroc_interval,
    auroc_of,
    calibration_check,
    describe_calibration,
    ece_of,
    wilson_interval,
)


def test_ece_and_auroc_of_plain_lists():
    # bins 9: |1 - 0.9| × 1/4; 8: |0 - 0.8| × 1/4; 7: |0.5 - 0.7| × 2/4
    assert ece_of([0.9, 0.8, 0.7, 0.7], [True, False, True, False]) == pytest.approx(0.325)
    assert ece_of([], []) is None
    assert auroc_of([0.9, 0.7], [0.8, 0.7]) == pytest.approx(2.5 / 4)  # a tie counts half
    assert auroc_of([0.9], []) is None
    rng = np.random.default_rng(2)  # the sorted count is the pairwise definition, ties and all
    right, wrong = np.round(rng.random(40), 1), np.round(rng.random(55), 1)
    pairs = right[:, None] - wrong[None, :]
    assert auroc_of(right, wrong) == pytest.approx(
        ((pairs > 0).sum() + 0.5 * (pairs == 0).sum()) / pairs.size)


def test_wilson_interval_matches_published_values():
    # 7 right of 8: the textbook Wilson 95 % interval is 0.529-0.978
    assert wilson_interval(7, 8) == pytest.approx((0.5291, 0.9776), abs=1e-4)
    assert wilson_interval(0, 5)[0] == 0.0 and wilson_interval(5, 5)[1] == 1.0
    low, high = wilson_interval(50, 100)
    assert low == pytest.approx(0.4038, abs=1e-4) and high == pytest.approx(0.5962, abs=1e-4)
    assert wilson_interval(0, 0) is None


def test_a_calibrated_answerer_scores_the_exact_expected_ece():
    """With every confidence 0.5 the answers share one bin, so a calibrated answerer's ECE is
    E|K/n - 1/2| for K ~ Binomial(n, 1/2): 0.5 × C(n, n/2) / 2^n for even n (0.0807 at 24)."""
    n = 24
    exact = sum(math.comb(n, k) * abs(k / n - 0.5) for k in range(n + 1)) / 2 ** n
    check = calibration_check([0.5] * n, [True] * 12 + [False] * 12)
    assert check.ece == 0.0 and not check.beyond_chance and check.leaning == ""
    assert check.expected == pytest.approx(exact, abs=0.005)
    assert exact < check.chance_high < 0.5
    assert calibration_check([0.5] * n, [True] * 12 + [False] * 12) == check  # seeded


def test_beyond_chance_says_which_way_confidence_runs():
    over = calibration_check([0.9] * 30, [True] * 10 + [False] * 20)
    assert over.beyond_chance and over.leaning == "over"
    assert over.ece == pytest.approx(0.9 - 1 / 3)
    under = calibration_check([0.2] * 30, [True] * 25 + [False] * 5)
    assert under.beyond_chance and under.leaning == "under"
    assert calibration_check([], []) is None
    said = describe_calibration(over.ece, over.to_dict())
    assert said.startswith("ECE 0.567: an answerer right exactly as often as it says would "
                           "score ") and " on these 30 answers, and above " in said
    assert said.endswith("this is beyond chance: confidence runs high (mean 0.90, accuracy 0.33).")
    fine = calibration_check([0.5] * 24, [True] * 11 + [False] * 13)
    assert describe_calibration(fine.ece, fine.to_dict()).endswith("this is within chance.")
    assert describe_calibration(None, None) == ""


def test_the_auroc_interval_is_the_bootstrap_of_resampled_right_and_wrong_answers():
    rng = np.random.default_rng(5)
    right, wrong = np.round(rng.random(9), 2), np.round(rng.random(13) * 0.8, 2)
    draws = np.random.default_rng(0)  # the same draws as the function's, one resample each row
    rs = right[draws.integers(0, len(right), (300, len(right)))]
    ws = wrong[draws.integers(0, len(wrong), (300, len(wrong)))]
    brute = [auroc_of(a, b) for a, b in zip(rs, ws, strict=True)]
    expected = tuple(np.quantile(brute, [0.025, 0.975]))
    assert auroc_interval(right, wrong, resamples=300) == pytest.approx(expected)
    low, high = auroc_interval(right, wrong)
    assert low <= auroc_of(right, wrong) <= high
    assert auroc_interval(right, []) is None


def test_a_long_set_stays_bounded():
    """Many thousand answers: fewer simulated draws, in blocks, and the AUROC counted on sorted
    scores, not on a right × wrong matrix (50 000 of each made one of 20 GB): memory and time
    stay bounded. The figures then hardly vary: a narrow interval, a small calibrated ECE."""
    rng = np.random.default_rng(1)
    c = rng.random(100_000)
    y = rng.random(len(c)) < c
    check = calibration_check(c, y)
    assert check.expected < 0.01 and check.ece < 0.01
    low, high = auroc_interval(c[y], c[~y])
    assert high - low < 0.02 and low <= auroc_of(c[y], c[~y]) <= high
