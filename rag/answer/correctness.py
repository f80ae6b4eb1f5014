"""How likely an offline (extractive) answer is right: its generation confidence, and its score.

The unit model (rag.answer.unit_scoring) says how likely each unit of the book is to hold the
answer. An answer is right when the units it quotes hold every key fact of the question, and on
the labelled sets three numbers tell right answers from wrong ones: how likely the best unit is,
how far it stands above the runner-up (a close second means the evidence is split between two
places), and how much of the evidence's summed unit probability the answer leaves unquoted (much
of it outside the quotes means a part of the question is likely answered elsewhere, or not at
all). When the question asks for a number or a definition (rag.answer.shape.asks_specific),
the best unit's probability counts once more: the one sentence that holds such an answer is
either among the evidence or not, while a reason or an open "how" is often only partly in the
best unit however likely it is. Two more (below): how much of the question the quotes cover,
and whether the leading unit is in retrieval's first section. A logistic model over those six,
fitted on the answers
themselves by bench/fit_confidence.py and rescaled so that neither book's calibration error is
the larger one, turns them into the probability that the answer is right. The unquoted share
raised the AUROC from 0.639 / 0.789 (sample / Physical AI) to 0.655 / 0.816, also when fitted on
one book and scored on the other (0.638 -> 0.653, 0.781 -> 0.816); the specific-question input
to 0.681 / 0.831 (fitted on the other book: 0.679 / 0.833), the calibration error 0.074 / 0.078
-> 0.063 / 0.064. Refit after a unit from another section could join an answer more easily
(rag.answer.quotes.choose; two more Physical AI answers right, both with low scores): AUROC
0.686 / 0.804, calibration error 0.057 / 0.056. Refit after the key-fact audit of 2026-11-23
(five sample and four Physical AI answers that state the book's answer in another of its wordings
now count as right, 53 / 44 in all): AUROC 0.685 / 0.755, calibration error 0.048 / 0.055. The
answers the audit turned right had low scores: on the audited labels the former weights scored
AUROC 0.688 / 0.763 with calibration errors of 0.079 / 0.119 (over the 0.10 target).

Two more inputs then helped on both books, fitted on one and scored on the other: the share of
the question's terms, each weighted by its rarity in the book, that the quotes contain (an answer
that never mentions a rare word of the question likely leaves a part unanswered;
rag.answer.extractive.coverage), and whether the leading unit is in the section retrieval ranked
first (the answerer and retrieval agree). Cross-book AUROC sample -> Physical AI 0.764 -> 0.832,
Physical AI -> sample 0.685 -> 0.704 (coverage alone: 0.804 / 0.699; the lead alone 0.799 /
0.684). Fitted on both and rescaled: AUROC 0.703 / 0.807, calibration error 0.092 / 0.094.

Refit on 2026-11-23 on the development sets of both books (the sample set, and for Physical AI
physical-ai.yaml with four sets written blind from the book: heldout, train1, train2 and 40
out-of-scope questions on the book's topic; 234 answers, against 149): the former weights scored
AUROC 0.703 / 0.708 and calibration error 0.092 / 0.062 on them, these 0.717 / 0.718 and 0.045 /
0.050. On physical-ai.yaml alone, where the former weights were fitted, AUROC 0.800 and
calibration error 0.169 (0.792 / 0.119 before): fitted on that set alone, the model was too sure
of itself on new questions.

Refit on 2026-11-24 with a seventh input, whether the leading unit came closer to the question
through a question the book itself asks (rag.book.quiz: a review question, a FAQ or
troubleshooting heading), after such units joined the answers (153 of 238 development answers
right, 145 before): such leads were right for 21 of 23 development answers, the others for 131 of
217. Left out of fold by set, the AUROC rose on every set (sample 0.725 -> 0.741, physical-ai
0.753 -> 0.778, heldout 0.578 -> 0.611, train1 0.701 -> 0.833, train2 0.821 -> 0.829). Fitted on
all: AUROC 0.716 / 0.731, calibration error 0.053 / 0.048 (refit on the six: 0.706 / 0.679).
physical-ai-blind.yaml, held out until then, disagreed: AUROC 0.657 -> 0.529 there, and "high"
right for 1 of 4 of its answers. Its answers, read since, show why: the three it answered through
the book's own question were about the right troubleshooting entry or step but missed a second
key fact ("What causes it and how do I fix it?"). It became a development set and the model was
refit with it (262 answers): the seventh input's weight fell from 1.34 to 0.66; AUROC 0.716 /
0.710, calibration error 0.044 / 0.056; "high" is rarer (15 of 262 answers, 14 right).

Checked again on 2026-11-24 once physical-ai-blind2.yaml became a development set and a weak
best unit no longer refuses an answer whose section retrieval found close
(rag.answer.extractive.CLOSE_SECTION; 294 answers): these weights score AUROC 0.716 / 0.700 and
calibration error 0.044 / 0.045 there, a refit 0.712 / 0.704, so they stay, and so do the level
cut-offs (bench/fit_confidence.py finds the same two).

Refit on 2026-11-24 once reference entries became whole units quoted only for questions that
ask for reading, review answers lost their "Answer 1:" labels and comments beside commands moved
after them (288 development answers, bench/labelled_sets.py): the former weights had drifted to
calibration error 0.043 / 0.094 (sample / Physical AI; pooled 0.076 against 0.048 expected of a
calibrated answerer, confidence running low), these score 0.062 / 0.056 (pooled 0.028) with
AUROC 0.712 / 0.739 (0.710 / 0.731 before). Their level cut-offs (0.8492 / 0.6856, data/
settings.toml) make "high" 38 development answers, 36 right (15, 14 right, before). On the
held-out sets, only reported: AUROC 0.62 -> 0.65, calibration error 0.107 -> 0.072.

That probability is the answer's whole confidence score: it is fitted on outcomes, so blending
it with the retrieval score again (the design's 0.6 × retrieval + 0.4 × generation, kept for
Claude's stated confidence) would only dilute it. On the labelled sets the retrieval score
ranked right answers below wrong ones (AUROC 0.46 and 0.42), and as a third input its fitted
weight came out negative, so it is not one.
"""

from __future__ import annotations

import math

FEATURES = ("best", "margin", "unquoted", "specific_best", "coverage", "lead_first", "asked",
            "more_quotes")
# Fitted by bench/fit_confidence.py on the development sets of both books (bench/labelled_sets.py,
# 422 answers), 2026-11-28, after short sections came to be quoted whole
# (rag.answer.passages) and blind3-5 became development sets: the former weights
# (288 answers, 2026-11-24) scored AUROC 0.710 / 0.750 (sample / Physical AI) with calibration
# errors 0.062 / 0.111, a refit on the seven inputs 0.711 / 0.743 with 0.075 / 0.073 (answers
# that quote a short section whole are right more often than the former weights said). An
# eighth input, how many quotes the answer has beyond the first (a short section read whole
# counting once): answers of three quotes were right 60 % of the time, of one or two 77-79 %
# (the evidence is scattered when three units pass). Left out of the fit set by set over the
# twelve development sets it raised the AUROC 0.673 -> 0.700; fitted on all, 0.727 / 0.751
# with calibration errors 0.046 / 0.052.
WEIGHTS = dict(zip(FEATURES, (0.557, 0.788, -1.848, 1.212, 1.188, 0.076, 0.647, -0.551),
                   strict=True))
BIAS = 1.393


def confidence_features(best: float, runner_up: float, unquoted: float = 0.0,
                        specific: bool = False, coverage: float = 1.0,
                        lead_first: bool = True, asked: bool = False, quotes: int = 1
                        ) -> tuple[float, ...]:
    """The model's inputs in FEATURES order (bench/fit_confidence.py fits on the same)."""
    return (best, max(best - runner_up, 0.0), unquoted, best if specific else 0.0, coverage,
            float(lead_first), float(asked), float(max(quotes - 1, 0)))


def answer_probability(best: float, runner_up: float, unquoted: float = 0.0,
                       specific: bool = False, coverage: float = 1.0,
                       lead_first: bool = True, asked: bool = False, quotes: int = 1) -> float:
    """P(the answer quoting this best unit holds every key fact), from the unit probabilities
    (`unquoted`: rag.answer.extractive.unquoted_share; `specific`: the question asks for a
    number or a definition; `coverage`: rag.answer.extractive.coverage; `lead_first`: the
    leading unit is in the section retrieval ranked first; `asked`: the leading unit came closer
    to the question through the book's own question it answers, rag.book.quiz; `quotes`: how
    many quotes the answer has, a short section read whole counting once)."""
    values = confidence_features(best, runner_up, unquoted, specific, coverage, lead_first,
                                 asked, quotes)
    z = BIAS + sum(WEIGHTS[name] * v for name, v in zip(FEATURES, values, strict=True))
    return 1.0 / (1.0 + math.exp(-z))
