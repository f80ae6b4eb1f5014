"""How much the answer metrics of a labelled set can be trusted, on so few questions.

A set of 30 questions gives 20-30 answers. On that many, the expected calibration error (ECE) of
an answerer whose confidence is exactly the chance of being right is not 0: drawn at random,
right and wrong answers leave each confidence bin's accuracy off its mean confidence. With the
confidences of the offline answerer on the Physical AI held-out set (24 answers), a perfectly
calibrated answerer would score ECE 0.17 on average and above 0.25 one time in ten; on the 86
answers of the sample set, 0.08 (0.12). The same holds for AUROC (which 10 right and 14 wrong
answers pin down to within about ±0.2) and for a level's accuracy (7 right of 8 "high" answers
is anywhere from 53 % to 98 %).

So each figure comes with its uncertainty: an ECE with what a calibrated answerer scores on the
same answers (calibration_check), an AUROC with a bootstrap interval (auroc_interval), a level's
accuracy with a Wilson interval (wilson_interval). Draws are seeded: the same outcomes give the
same figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

N_BINS = 10
DRAWS = 2000  # simulated label draws for the calibrated answerer's ECE
RESAMPLES = 2000  # bootstrap resamples for the AUROC interval
Z95 = 1.959964  # the normal quantile of a two-sided 95 % interval
BLOCK = 1_000_000  # simulated values held at once
WORK = 20_000_000  # simulated values in all
CHANCE = 0.9  # an ECE above what a calibrated answerer scores this often is not chance


def ece_of(confidences: Sequence[float], right: Sequence[bool], bins: int = N_BINS
           ) -> float | None:
    """Σ over equal-width confidence bins of (share of answers) × |accuracy − mean confidence|."""
    c = np.asarray(confidences, dtype=np.float64)
    if not len(c):
        return None
    onehot = _bin_matrix(c, bins)
    return float(np.abs(np.asarray(right, dtype=np.float64) @ onehot - c @ onehot).sum()
                 / len(c))


def auroc_of(right: Sequence[float], wrong: Sequence[float]) -> float | None:
    """P(a right answer's confidence > a wrong one's), ties counted half (Mann–Whitney U /
    n₊n₋); None without both kinds."""
    r, w = np.asarray(right, dtype=np.float64), np.asarray(wrong, dtype=np.float64)
    if not len(r) or not len(w):
        return None
    return float(_auroc_rows(r[None, :], w[None, :])[0])


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of a rate `successes` / `n` (sound at 0 and n, unlike
    the normal approximation); None when n is 0."""
    if n <= 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class CalibrationCheck:
    """An ECE against what an answerer whose confidence is the chance of being right scores on
    answers with the same confidences."""

    ece: float
    expected: float  # a calibrated answerer's mean ECE on this many answers
    chance_high: float  # ... exceeded one time in ten (CHANCE)
    mean_confidence: float
    accuracy: float
    answers: int

    @property
    def beyond_chance(self) -> bool:
        return self.ece > self.chance_high

    @property
    def leaning(self) -> str:
        """'over' (confidence above accuracy), 'under', or '' when within chance."""
        if not self.beyond_chance:
            return ""
        return "over" if self.mean_confidence > self.accuracy else "under"

    def to_dict(self) -> dict[str, float | bool | str]:
        return {"expected_if_calibrated": round(self.expected, 4),
                "chance_high": round(self.chance_high, 4), "beyond_chance": self.beyond_chance,
                "leaning": self.leaning, "mean_confidence": round(self.mean_confidence, 4),
                "accuracy": round(self.accuracy, 4), "answers": self.answers}


def calibration_check(confidences: Sequence[float], right: Sequence[bool],
                      bins: int = N_BINS, draws: int = DRAWS, seed: int = 0
                      ) -> CalibrationCheck | None:
    """The ECE of these answers, and the ECE of `draws` simulated answerers that are right with
    exactly their stated confidence: its mean and the value it exceeds one time in ten."""
    c = np.clip(np.asarray(confidences, dtype=np.float64), 0.0, 1.0)
    ece = ece_of(c, right, bins)
    if ece is None:
        return None
    rng = np.random.default_rng(seed)
    onehot = _bin_matrix(c, bins)
    gaps = np.concatenate([
        np.abs((rng.random((size, len(c))) < c) @ onehot - c @ onehot).sum(axis=1) / len(c)
        for size in _blocks(draws, len(c))])
    return CalibrationCheck(ece, float(gaps.mean()), float(np.quantile(gaps, CHANCE)),
                            float(c.mean()), float(np.mean(right)), len(c))


def auroc_interval(right: Sequence[float], wrong: Sequence[float], resamples: int = RESAMPLES,
                   seed: int = 0) -> tuple[float, float] | None:
    """A 95 % bootstrap interval of the AUROC: right and wrong answers resampled apart (each
    draw keeps both kinds, in their numbers); None without both kinds."""
    r, w = np.asarray(right, dtype=np.float64), np.asarray(wrong, dtype=np.float64)
    if not len(r) or not len(w):
        return None
    rng = np.random.default_rng(seed)
    scores = np.concatenate([
        _auroc_rows(r[rng.integers(0, len(r), (size, len(r)))],
                    w[rng.integers(0, len(w), (size, len(w)))])
        for size in _blocks(resamples, len(r) + len(w))])
    lo, hi = np.quantile(scores, [0.025, 0.975])
    return float(lo), float(hi)


def _bin_matrix(confidences: np.ndarray, bins: int) -> np.ndarray:
    """Answers x bins, 1 where an answer's confidence falls: a vector's per-bin sums in one
    product. (+ 1e-9: 0.3 × 10 may land a hair under 3 and fall into the bin below.)"""
    return np.eye(bins)[np.clip(np.floor(confidences * bins + 1e-9).astype(int), 0, bins - 1)]


def _auroc_rows(right: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    """The AUROC of each row of `right` against the same row of `wrong`, from sorted counts (how
    many wrong answers score below, or level with, each right one): O(n log n), no n₊ × n₋
    matrix. The rows' values are shifted apart, so one sorted array answers them all."""
    rows, n_right, n_wrong = len(right), right.shape[1], wrong.shape[1]
    span = max(right.max(), wrong.max()) - min(right.min(), wrong.min()) + 1.0
    shift = span * np.arange(rows)[:, None]
    flat, queries = np.sort(wrong + shift, axis=None), (right + shift).ravel()
    start = np.repeat(np.arange(rows) * n_wrong, n_right)
    below = np.searchsorted(flat, queries, "left") - start
    level = np.searchsorted(flat, queries, "right") - start - below
    return (below + 0.5 * level).reshape(rows, n_right).sum(axis=1) / (n_right * n_wrong)


def _blocks(count: int, width: int) -> list[int]:
    """`count` simulated rows of `width` values each, in blocks of at most BLOCK values, and no
    more rows than WORK values allow (fewer draws on a set of many thousand answers, whose
    figures hardly vary anyway): memory and time stay bounded."""
    count = max(1, min(count, WORK // width))
    block = max(1, BLOCK // width)
    return [min(block, count - start) for start in range(0, count, block)]


def describe_calibration(ece: float | None, check: dict | None) -> str:
    """One sentence on an ECE, from CalibrationCheck.to_dict(): what a calibrated answerer
    scores on the same answers, and whether this one is beyond chance, and which way."""
    if ece is None or not check:
        return ""
    said = (f"ECE {ece:.3f}: an answerer right exactly as often as it says would score "
            f"{check['expected_if_calibrated']:.3f} on these {check['answers']} answers, and above "
            f"{check['chance_high']:.3f} one time in ten")
    if not check["beyond_chance"]:
        return f"{said}; this is within chance."
    way = "high" if check["leaning"] == "over" else "low"
    return (f"{said}; this is beyond chance: confidence runs {way} (mean "
            f"{check['mean_confidence']:.2f}, accuracy {check['accuracy']:.2f}).")
