"""Fit the extractive answerer's unit model (rag/answer/unit_scoring.py) on labelled questions.

For every in-scope question with key facts, retrieval runs as the app runs it, every unit of the
evidence sections gets its features, and a unit is labelled 1 when it contains one of the key
facts. A logistic regression is fitted on one book's set and scored on the other's (top-1 unit
holds a fact), then on both; the printed WEIGHTS/BIAS go into unit_scoring.py.

    python bench/fit_extractive.py [--book-set BOOK SET INDEX ...] [--c 1.0]

Books and sets default to the sample book and, when ../shared is present, the Physical AI book.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

import rag  # noqa: E402,F401
from rag.answer.evidence import gather_sources, source_units  # noqa: E402
from rag.answer.unit_scoring import FEATURES, idf_weights, unit_features  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.lexical import tokenize  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.retrieval.search import search_book  # noqa: E402
from rag.tuning.answers import key_facts_found  # noqa: E402
from rag.tuning.questions import load_questions  # noqa: E402

DEFAULT_SETS = [
    (ROOT / "data" / "book", ROOT / "data" / "eval" / "questions.yaml", None),
    (ROOT.parent / "shared" / "data" / "physical-ai-book",
     ROOT / "data" / "eval" / "physical-ai.yaml", None),
]


def collect(book: Path, question_set: Path, index_dir: Path | None):
    """(features, labels, question number) for every unit of every judged question."""
    settings = load_settings(book_dir=book, **({"index_dir": index_dir} if index_dir else {}))
    index, _ = load_index(settings)
    xs, ys, groups = [], [], []
    for n, q in enumerate(load_questions(question_set)):
        if not (q.in_scope and q.key_facts):
            continue
        retrieval = search_book(index, q.question, settings.retrieval)
        sources = gather_sources(retrieval.hits, retrieval.candidates)
        units, vectors = source_units(sources, index.sentences, None)
        if not units:
            continue
        best = max(h.blended for h in sources) or 1.0
        features = unit_features(q.question, units, vectors, index.embedder.embed_query(
            q.question), idf_weights(index.sentences, set(tokenize(q.question))),
            [h.blended / best for h in sources])
        xs.append(features)
        ys.append(np.array([any(key_facts_found(u.text, q.key_facts)) for u in units]))
        groups += [n] * len(units)
    return np.vstack(xs), np.concatenate(ys).astype(int), np.array(groups)


def top1(model, x, y, groups) -> float:
    """Share of questions whose best-scored unit holds a key fact."""
    p = model.decision_function(x)
    wins = [y[groups == g][np.argmax(p[groups == g])] for g in np.unique(groups)]
    return float(np.mean(wins))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--c", type=float, default=1.0, help="inverse regularisation strength")
    args = parser.parse_args()
    sets = [s for s in DEFAULT_SETS if s[0].exists() and s[1].exists()]
    data = [collect(*s) for s in sets]
    for (_, qs, _), (_, y, g) in zip(sets, data, strict=True):
        print(f"{qs.name}: {len(np.unique(g))} questions, {len(y)} units, {y.sum()} hold a fact")
    if len(data) == 2:
        for a, b in ((0, 1), (1, 0)):
            model = LogisticRegression(C=args.c, max_iter=2000).fit(data[a][0], data[a][1])
            print(f"fit on {sets[a][1].name}, top-1 on {sets[b][1].name}: "
                  f"{top1(model, *data[b]):.3f} (on itself {top1(model, *data[a]):.3f})")
    x = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    g = np.concatenate([d[2] + 10_000 * i for i, d in enumerate(data)])
    model = LogisticRegression(C=args.c, max_iter=2000).fit(x, y)
    print(f"fit on all: top-1 {top1(model, x, y, g):.3f}")
    print("WEIGHTS = dict(zip(FEATURES, (")
    print("    " + ", ".join(f"{w:.3f}" for w in model.coef_[0]) + "),")
    print("    strict=True))")
    print(f"BIAS = {model.intercept_[0]:.3f}")
    for name, w in zip(FEATURES, model.coef_[0], strict=True):
        print(f"  {name:18s} {w:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
