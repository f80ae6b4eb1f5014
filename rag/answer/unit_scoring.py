"""How likely a unit of the book is to hold the answer to a question: a logistic model over a
few features of the pair, with weights fitted on labelled questions (bench/fit_extractive.py).

The label is "this unit contains one of the question's key facts". Fitted on one book's set and
scored on the other's, the top unit holds a fact for 0.44 (sample -> Physical AI) and 0.48
(Physical AI -> sample) of questions; the weights below are fitted on both sets (top-1 0.50).
A boosted-tree model reached 0.85 on the book it was fitted on but 0.22-0.34 on the other one,
so the model stays linear: it generalises, and each weight can be read. Its probability ranks the
units and, for the best unit, is the answer's generation confidence.

Not adopted (2026-11-23): bench/fit_extractive.py's standardised fit (C 0.05) answered 1 + 3 more
questions in-sample (sample 45 -> 46 of 87, Physical AI 36 -> 39 of 64) but one each way
cross-book, and raised the Physical AI calibration error 0.094 -> 0.149 (target <= 0.10) while
lowering the confidence AUROC 0.58 -> 0.51; these weights are the former unstandardised fit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rag.answer.evidence import EvidenceUnit
from rag.answer.shape import (
    DEFINITION,
    defines,
    detour,
    expands,
    question_shape,
    question_subject,
    shape_match,
)
from rag.index.lexical import tokenize
from rag.index.sentences import SentenceTable

FEATURES = ("cosine", "lexical", "context", "phrase", "shape", "prior", "source_rank", "detour",
            "item", "command", "row", "heading", "cosine_gap", "lexical_gap", "log_words",
            "first_in_section", "heading_mismatch", "previous_cosine", "previous_lexical",
            "next_cosine", "next_lexical", "section_cosine_gap", "section_lexical_gap",
            "defines_subject", "expands_acronym")
# Fitted by bench/fit_extractive.py on data/eval/questions.yaml + data/eval/physical-ai.yaml.
WEIGHTS = dict(zip(FEATURES, (
    2.063, 1.300, 2.292, 0.195, 0.807, 4.287, -0.141, -1.006, 0.411, 0.058, 0.537, -0.759,
    0.175, 2.087, 0.278, -0.088, -0.663, 0.791, 0.425, 1.170, -0.035, 0.417, -0.985, 1.329,
    1.587), strict=True))
BIAS = -8.621


def idf_weights(table: SentenceTable | None, terms: set[str]) -> dict[str, float]:
    """Inverse document frequency of the question's terms over the book's units (a rare word
    says more about what a unit answers); 1 for every term without a table."""
    if table is None or not table.texts:
        return dict.fromkeys(terms, 1.0)
    df = table.document_frequency
    n = len(table.texts)
    return {t: math.log(1 + (n - df.get(t, 0) + 0.5) / (df.get(t, 0) + 0.5)) for t in terms}


def _pairs(stems: list[str]) -> set[tuple[str, str]]:
    return set(zip(stems, stems[1:], strict=False))


def unit_cosines(units: Sequence[EvidenceUnit], vectors: np.ndarray,
                 query_vector: np.ndarray | None, asked: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Each unit's cosine to the question (zeros without a question vector), and whether it came
    through the book's own question the unit answers. `asked` holds, row by row, that question's
    vector (rag.book.quiz): such a unit's cosine is the closer of the two, since a reader who asks
    the book's question in other words is nearer to it than to any one sentence of its answer."""
    if query_vector is None or not len(units):
        return np.zeros(len(units)), np.zeros(len(units), dtype=bool)
    own = vectors @ query_vector
    if asked is None:
        return own, np.zeros(len(units), dtype=bool)
    through_question = asked @ query_vector
    through = np.array([bool(u.asked) for u in units]) & (through_question > own)
    return np.where(through, through_question, own), through


def unit_features(question: str, units: Sequence[EvidenceUnit], cosines: np.ndarray,
                  idf: dict[str, float], priors: Sequence[float],
                  unit_stems: Sequence[list[str]] | None = None) -> np.ndarray:
    """One row of FEATURES per unit, from its cosine to the question (unit_cosines());
    `unit_stems` (tokenize of each unit) when already known."""
    stems = tokenize(question)
    terms, pairs = set(stems), _pairs(stems)
    total = sum(idf.get(t, 1.0) for t in terms) or 1.0
    shape = question_shape(question)
    subject = question_subject(question)
    rows = []
    all_stems = unit_stems if unit_stems is not None else [tokenize(u.text) for u in units]
    for unit, cosine, stems_of_unit in zip(units, cosines, all_stems, strict=True):
        words = set(stems_of_unit)
        heading = set(tokenize(" ".join(unit.heading)))
        rows.append([
            float(cosine),
            sum(idf.get(t, 1.0) for t in terms & words) / total,
            sum(idf.get(t, 1.0) for t in (terms & heading) - words) / total,
            len(pairs & _pairs(stems_of_unit)) / len(pairs) if pairs else 0.0,
            shape_match(shape, unit.text, question),
            priors[unit.source],
            float(unit.source),
            float(detour(unit.text)),
            float(unit.kind == "item"), float(unit.kind == "command"), float(unit.kind == "row"),
            float(unit.kind == "heading"),
            0.0, 0.0,
            math.log(1 + len(unit.text.split())),
            float(unit.position == 0),
            float(unit.kind == "heading" and shape != DEFINITION),
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
            float(defines(unit.text, subject)), float(expands(unit.text, question)),
        ])
    features = np.array(rows, dtype=np.float64).reshape(len(units), len(FEATURES))
    if len(units):
        _relative_features(features, [u.source for u in units])
    return features


def _relative_features(features: np.ndarray, sources: list[int]) -> None:
    """Each unit against the best one (overall and in its section), and its neighbours' match:
    the sentence after the one that names the topic often holds the answer."""
    cosine, lexical = features[:, FEATURES.index("cosine")], features[:, FEATURES.index("lexical")]
    features[:, FEATURES.index("cosine_gap")] = cosine - cosine.max()
    features[:, FEATURES.index("lexical_gap")] = lexical - lexical.max()
    src = np.array(sources)
    for s in np.unique(src):
        rows = np.flatnonzero(src == s)
        features[rows, FEATURES.index("section_cosine_gap")] = cosine[rows] - cosine[rows].max()
        features[rows, FEATURES.index("section_lexical_gap")] = lexical[rows] - lexical[rows].max()
        for a, b in zip(rows[:-1], rows[1:], strict=True):
            features[b, FEATURES.index("previous_cosine")] = cosine[a]
            features[b, FEATURES.index("previous_lexical")] = lexical[a]
            features[a, FEATURES.index("next_cosine")] = cosine[b]
            features[a, FEATURES.index("next_lexical")] = lexical[b]


def unit_probabilities(features: np.ndarray, weights: dict[str, float] | None = None,
                       bias: float | None = None) -> np.ndarray:
    w = np.array([(weights or WEIGHTS)[f] for f in FEATURES])
    z = features @ w + (BIAS if bias is None else bias)
    return 1.0 / (1.0 + np.exp(-z))
