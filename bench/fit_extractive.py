"""Fit the extractive answerer's unit model (rag/answer/unit_scoring.py) on labelled questions.

For every in-scope question with key facts, retrieval runs as the app runs it, every unit of the
evidence sections gets its features (against the question's exact vector, as the answerer
scores them), and a unit is labelled 1 when it contains one of the key facts. Features are
standardised before the L2-regularised logistic regression, so the penalty does not depend on
a feature's scale; the printed weights are mapped back to raw features. The model is fitted on
one book's set and scored on the other's, then on both; printed per set: top-1 (the best unit
holds a fact), answer accuracy (the units rag.answer.quotes.choose() picks hold every key fact
and the best one clears the support floor) and the AUROC of the best unit's probability for right vs
wrong answers. The printed WEIGHTS/BIAS go into unit_scoring.py.

    python bench/fit_extractive.py [--c 0.05] [--anatomy] [--development]

--development fits and scores on every development set of each book (bench/labelled_sets.py),
pooled per book, instead of data/eval/questions.yaml and data/eval/physical-ai.yaml: fitted on
one book and scored on the other, it estimates how the unit model does on a book it was not
fitted on (2026-11-24: 38 of 87 sample questions and 108 of 211 Physical AI questions right,
against 44 and 133 fitted on both; today's weights, fitted on the two sets above and then
adjusted, 53 and 127).

--anatomy prints, per set and with today's weights, where answers lose key facts instead: the
ceiling (questions whose evidence has one to three units, within the answer's word limit, that
together hold every fact), the answers that hold every fact, and of the wrong ones, how many
lead with a unit that holds no fact and at which rank the first unit holding one stands.

Books and sets default to the sample book and, when ../shared is present, the Physical AI book.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

import rag  # noqa: E402,F401
from bench.labelled_sets import BOOKS, DEVELOPMENT, sets_of  # noqa: E402
from rag.answer.evidence import gather_sources, source_units  # noqa: E402
from rag.answer.quotes import MAX_WORDS, SUPPORT_FLOOR, Scored, choose  # noqa: E402
from rag.answer.unit_scoring import (  # noqa: E402
    BIAS,
    FEATURES,
    WEIGHTS,
    idf_weights,
    unit_cosines,
    unit_features,
    unit_probabilities,
)
from rag.config import load_settings  # noqa: E402
from rag.index.lexical import tokenize  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.retrieval.search import search_book  # noqa: E402
from rag.tuning.key_facts import key_facts_found  # noqa: E402
from rag.tuning.questions import load_questions  # noqa: E402

DEFAULT_SETS = [
    (ROOT / "data" / "book", ROOT / "data" / "eval" / "questions.yaml", None),
    (ROOT.parent / "shared" / "data" / "physical-ai-book",
     ROOT / "data" / "eval" / "physical-ai.yaml", None),
]
# Cross-book answer accuracy (sample -> Physical AI, Physical AI -> sample) by C: 0.02 31/64 and
# 42/87, 0.05 32/64 and 39/87, 0.1 31/64 and 37/87, 0.3 31/64 and 36/87; unstandardised C 1.0
# (the former fit) 31/64 and 38/87. The differences are one to a few questions.
DEFAULT_C = 0.05


def development_groups() -> list[tuple[str, list[tuple[Path, Path, None]]]]:
    """Per book (when present), its development sets that exist, as collect() takes them."""
    return [(f"{book.name} (development sets)",
             [(book, qs, None) for qs in sets_of(book, DEVELOPMENT) if qs.exists()])
            for book, _ in BOOKS if book.exists()]


def collect(book: Path, question_set: Path, index_dir: Path | None) -> list[dict]:
    """Per judged question: its units, their features, stems and labels, and its key facts."""
    settings = load_settings(book_dir=book, **({"index_dir": index_dir} if index_dir else {}))
    index, _ = load_index(settings)
    out = []
    for q in load_questions(question_set):
        if not (q.in_scope and q.key_facts):
            continue
        retrieval = search_book(index, q.question, settings.retrieval)
        sources = gather_sources(retrieval.hits, retrieval.candidates)
        units, vectors, asked = source_units(sources, index.sentences, None)
        if not units:
            continue
        best = max(h.blended for h in sources) or 1.0
        stems = [tokenize(u.text) for u in units]
        cosines, _ = unit_cosines(units, vectors, index.embedder.embed_query_exact(q.question),
                                  asked)
        features = unit_features(q.question, units, cosines, idf_weights(
            index.sentences, set(tokenize(q.question))), [h.blended / best for h in sources],
            stems)
        labels = np.array([any(key_facts_found(u.text, q.key_facts)) for u in units], int)
        out.append(dict(question=q.question, facts=q.key_facts, units=units, stems=stems,
                        x=features, y=labels))
    return out


def fit(questions: list[dict], c: float) -> tuple[np.ndarray, float]:
    """Weights and bias over raw features, fitted on standardised ones."""
    x = np.vstack([q["x"] for q in questions])
    y = np.concatenate([q["y"] for q in questions])
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    model = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / scale, y)
    weights = model.coef_[0] / scale
    return weights, float(model.intercept_[0] - (model.coef_[0] * mean / scale).sum())


def auroc(scores: list[float], right: list[bool]) -> float:
    pos = np.array([s for s, r in zip(scores, right, strict=True) if r])
    neg = np.array([s for s, r in zip(scores, right, strict=True) if not r])
    if not len(pos) or not len(neg):
        return float("nan")
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def answer(q: dict, p: np.ndarray) -> tuple[list[Scored], bool]:
    """The units rag.answer.quotes.choose() picks with these unit probabilities, and whether they
    answer: the best clears the support floor and together they hold every key fact."""
    scored = [Scored(u, round(float(v), 6), frozenset(s))
              for u, v, s in zip(q["units"], p, q["stems"], strict=True)]
    chosen = choose(scored, 3, q["question"])
    return chosen, chosen[0].probability >= SUPPORT_FLOOR and all(
        key_facts_found(" ".join(s.unit.text for s in chosen), q["facts"]))


def figures(questions: list[dict], weights: np.ndarray, bias: float, n_judged: int) -> str:
    """Top-1, answer accuracy over the set's in-scope questions with key facts (those whose
    retrieval found no unit count as wrong) and the AUROC of the best unit's probability."""
    top, correct, confidences, right = 0, 0, [], []
    for q in questions:
        p = unit_probabilities(q["x"], dict(zip(FEATURES, weights, strict=True)), bias)
        top += int(q["y"][int(np.argmax(p))])
        chosen, ok = answer(q, p)
        correct += ok
        confidences.append(chosen[0].probability)
        right.append(ok)
    return (f"top-1 {top / len(questions):.3f}, answer accuracy {correct / n_judged:.3f} "
            f"({correct}/{n_judged}), AUROC {auroc(confidences, right):.3f}")


def ceiling(q: dict) -> bool:
    """Some one to three units of the evidence, within MAX_WORDS, hold every key fact."""
    holds = [frozenset(i for i, ok in enumerate(key_facts_found(u.text, q["facts"])) if ok)
             for u in q["units"]]
    useful = [n for n, h in enumerate(holds) if h]
    everything = frozenset(range(len(q["facts"])))
    return any(frozenset().union(*(holds[n] for n in combo)) == everything
               and sum(len(q["units"][n].text.split()) for n in combo) <= MAX_WORDS
               for size in (1, 2, 3) for combo in itertools.combinations(useful, size))


def anatomy(questions: list[dict], n_judged: int) -> str:
    """Where the answers of one set lose key facts, with today's unit weights."""
    right, lead_without, ranks = 0, 0, Counter()
    for q in questions:
        p = unit_probabilities(q["x"])
        chosen, ok = answer(q, p)
        if ok:
            right += 1
            continue
        lead_without += not any(key_facts_found(chosen[0].unit.text, q["facts"]))
        holding = np.flatnonzero(q["y"][np.argsort(-p)])  # ranks of the units holding a fact
        first = int(holding[0]) + 1 if len(holding) else None
        ranks["none" if first is None else str(first) if first <= 5 else ">5"] += 1
    wrong = len(questions) - right
    return (f"ceiling {sum(ceiling(q) for q in questions)}/{n_judged}, right {right}/{n_judged}; "
            f"of {wrong} wrong or refused, {lead_without} lead with a unit holding no fact; "
            f"rank of the first unit holding one: " +
            ", ".join(f"{k}: {ranks[k]}" for k in ("1", "2", "3", "4", "5", ">5", "none")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--c", type=float, default=DEFAULT_C,
                        help="inverse regularisation strength (standardised features)")
    parser.add_argument("--anatomy", action="store_true",
                        help="where answers lose key facts with today's weights (no fit)")
    parser.add_argument("--development", action="store_true",
                        help="every development set of each book, pooled per book")
    args = parser.parse_args()
    groups = [(name, sets) for name, sets in (development_groups() if args.development else [
        (qs.name, [(book, qs, index)]) for book, qs, index in DEFAULT_SETS]) if sets]
    names = [name for name, _ in groups]
    data = [[q for s in sets for q in collect(*s)] for _, sets in groups]
    judged = [sum(1 for s in sets for q in load_questions(s[1]) if q.in_scope and q.key_facts)
              for _, sets in groups]
    if args.anatomy:
        for name, d, n in zip(names, data, judged, strict=True):
            print(f"{name}: {anatomy(d, n)}")
        return 0
    for name, d in zip(names, data, strict=True):
        print(f"{name}: {len(d)} questions, {sum(len(q['y']) for q in d)} units, "
              f"{sum(int(q['y'].sum()) for q in d)} hold a fact")
    today = np.array([WEIGHTS[f] for f in FEATURES])
    for name, d, n in zip(names, data, judged, strict=True):
        print(f"today's weights, scored on {name}: {figures(d, today, BIAS, n)}")
    if len(data) == 2:
        for a, b in ((0, 1), (1, 0)):
            weights, bias = fit(data[a], args.c)
            print(f"fit on {names[a]}, scored on {names[b]}: "
                  f"{figures(data[b], weights, bias, judged[b])}")
    weights, bias = fit([q for d in data for q in d], args.c)
    for name, d, n in zip(names, data, judged, strict=True):
        print(f"fit on all, scored on {name}: {figures(d, weights, bias, n)}")
    print("WEIGHTS = dict(zip(FEATURES, (")
    print("    " + ", ".join(f"{w:.3f}" for w in weights) + "),")
    print("    strict=True))")
    print(f"BIAS = {bias:.3f}")
    for name, w in zip(FEATURES, weights, strict=True):
        print(f"  {name:18s} {w:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
