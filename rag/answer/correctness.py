"""How likely an offline (extractive) answer is right: its generation confidence, and its score.

The unit model (rag.answer.unit_scoring) says how likely each unit of the book is to hold the
answer. An answer is right when the units it quotes hold every key fact of the question, and on
the labelled sets two numbers tell right answers from wrong ones: how likely the best unit is,
and how far it stands above the runner-up (a close second means the evidence is split between
two places). A logistic model over those two, fitted on the answers themselves by
bench/fit_confidence.py, turns them into the probability that the answer is right.

That probability is the answer's whole confidence score: it is fitted on outcomes, so blending
it with the retrieval score again (the design's 0.6 × retrieval + 0.4 × generation, kept for
Claude's stated confidence) would only dilute it. On the labelled sets the retrieval score
ranked right answers below wrong ones (AUROC 0.46 and 0.42), and as a third input its fitted
weight came out negative, so it is not one.
"""

from __future__ import annotations

import math

FEATURES = ("best", "margin")
# Fitted by bench/fit_confidence.py on data/eval/questions.yaml + data/eval/physical-ai.yaml.
WEIGHTS = dict(zip(FEATURES, (1.358, 1.438), strict=True))
BIAS = -0.491


def answer_probability(best: float, runner_up: float) -> float:
    """P(the answer quoting this best unit holds every key fact), from the unit probabilities."""
    features = {"best": best, "margin": max(best - runner_up, 0.0)}
    z = BIAS + sum(WEIGHTS[name] * features[name] for name in FEATURES)
    return 1.0 / (1.0 + math.exp(-z))
