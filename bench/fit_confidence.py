"""Fit the offline answer's confidence (rag/answer/correctness.py) and its level cut-offs.

Every judged question of each labelled set goes through the pipeline as the app runs it. An
answer (or a draft only the confidence gate held back) is right when it holds every key fact; an
answered out-of-scope question is wrong. Its features are the best unit's probability and that
unit's margin over the runner-up, the share of the evidence's unit probability the answer
leaves unquoted (the draft carries those three), and the best unit's probability again when
the question asks for a number or a definition (rag.answer.shape.asks_specific). A logistic
model is fitted on one book's answers and scored on the other's, then on both (each book
weighing the same); the fitted score is then rescaled (one factor and one offset, which keep its
order and so its AUROC) so that the worse of the two books' calibration errors is as small as it
can be: the levels promise the same on every book. Printed per set: the AUROC of today's
confidence score (rag/answer/correctness.py's weights) and of the refit, the expected
calibration error, and the answers at or above each score with their accuracy. Last, the level
cut-offs, on out-of-fold scores (each development set scored by the refit fitted without it; a
book with one set, a fifth of it at a time): "high" from the lowest score where answers at or
above it are right >= 90 % of the time on every book, "medium" from the lowest score where the
answers between it and "high" are right >= 70 % of the time on every book (both with at least
MIN_ANSWERS answers over the books). Cut on the scores of the answers the model was fitted on,
the levels promised more than new answers kept.

    python bench/fit_confidence.py [--index-root DIR]
    python bench/fit_confidence.py --by-book [--index-root DIR]

--by-book leaves one book out at a time: the model is fitted (and rescaled, and its levels cut)
on the other books' answers and scored on the book left out. Printed per book, out of fold:
AUROC, calibration error, and how often its "high", "medium" and "low" answers are right, beside
the shipped weights and level cut-offs (data/settings.toml), which were fitted with that book.

Books default to the sample book (data/eval/questions.yaml) and, when ../shared is present, the
Physical AI book with its development sets (DEFAULT_SETS); "every set" above means every book.
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
from bench.labelled_sets import BOOKS, DEVELOPMENT, sets_of  # noqa: E402
from rag.answer.correctness import answer_probability, confidence_features  # noqa: E402
from rag.answer.pipeline import Pipeline  # noqa: E402
from rag.answer.shape import asks_specific  # noqa: E402
from rag.config import load_settings  # noqa: E402
from rag.index.load import load_index  # noqa: E402
from rag.tuning.answers import outcome_of  # noqa: E402
from rag.tuning.questions import load_questions  # noqa: E402

# Per book, its development sets (bench/labelled_sets.py): never a held-out one, since fitting
# on it would make its figures say nothing about new questions.
DEFAULT_SETS = [(book, sets_of(book, DEVELOPMENT)) for book, _ in BOOKS]
MIN_ANSWERS = 10  # a level needs at least this many answers
FOLDS = 5  # a book with one labelled set is left out a fifth at a time
HIGH_TARGET, MEDIUM_TARGET = 0.9, 0.7  # the design's promise for "high" and "medium"
BINS = 10


def collect(book: Path, question_sets: list[Path], index_root: Path | None = None
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(best, runner-up, unquoted, asks specific, coverage, lead first, asked, quotes) per
    answered judged question, whether it is right, and the name of its set."""
    settings = load_settings(book_dir=book, **(
        {"index_dir": index_root / book.name} if index_root else {}))
    index, _ = load_index(settings)
    pipeline = Pipeline(index, settings)
    x, y, group = [], [], []
    mismatched = 0  # answers whose inputs do not give the confidence the app gave them
    for question_set, q in ((s, q) for s in question_sets for q in load_questions(s)):
        response = pipeline.answer(q.question)
        outcome = outcome_of(q, response, 0.0)
        draft = response.draft
        if not outcome.judged or not (outcome.answered or outcome.held_by_gate) or \
                draft is None or not draft.calibrated:
            continue
        x.append((draft.supports[0], draft.runner_up or 0.0, draft.unquoted or 0.0,
                  float(asks_specific(q.question)),
                  1.0 if draft.coverage is None else draft.coverage,
                  float(draft.markers[:1] == ("S1",)), float(bool(draft.asked)),
                  # the chosen quotes, as the app counts them: not the units read around them
                  float(len(draft.quotes) - sum(draft.around))))
        if abs(answer_probability(*arguments(np.array(x[-1]))) -
               draft.generation_confidence) > 5.1e-5:  # the draft rounds it to 4 places
            mismatched += 1
        y.append(outcome.right_if_answered)
        group.append(question_set.name)
    if mismatched:
        print(f"{book.name}: {mismatched} answers' inputs do not give their confidence: "
              "collect() no longer reads the draft as rag.answer.extractive does",
              file=sys.stderr)
    if len(question_sets) == 1:  # one set: FOLDS parts of it, every FOLDS-th answer in each
        group = [f"{name} {n % FOLDS}" for n, name in enumerate(group)]
    return np.array(x, float), np.array(y, bool), np.array(group)


def design(x: np.ndarray) -> np.ndarray:
    """The model's inputs per answer, as the app computes them (rag/answer/correctness.py)."""
    return np.array([confidence_features(*arguments(row)) for row in x], float)


def arguments(row: np.ndarray) -> tuple:
    """One row of collect() as the arguments of confidence_features and answer_probability."""
    return (*row[:3], bool(row[3]), row[4], bool(row[5]), bool(row[6]), int(row[7]))


def auroc(scores: np.ndarray, right: np.ndarray) -> float:
    pos, neg = scores[right], scores[~right]
    if not len(pos) or not len(neg):
        return float("nan")
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size)


def ece(scores: np.ndarray, right: np.ndarray) -> float:
    bins = np.minimum(np.floor(scores * BINS + 1e-9), BINS - 1)
    return float(sum((bins == b).mean() * abs(right[bins == b].mean() - scores[bins == b].mean())
                     for b in np.unique(bins)))


def cut_off(sets: list[tuple[np.ndarray, np.ndarray]], target: float,
            upper: float = float("inf")) -> float | None:
    """The lowest score from which the answers below `upper` are right >= `target` of the time
    on EVERY set, with at least MIN_ANSWERS such answers over the sets: a level must hold on each
    book, not only on average ("high": 90 % with no upper bound; "medium": 70 % below "high")."""
    pooled = np.concatenate([scores for scores, _ in sets])
    for s in np.sort(np.unique(pooled[pooled < upper])):
        bands = [(band(scores, s, upper), right) for scores, right in sets]
        if sum(int(b.sum()) for b, _ in bands) >= MIN_ANSWERS and all(
                not b.any() or right[b].mean() >= target for b, right in bands):
            return float(s)
    return None


def band(scores: np.ndarray, lower: float, upper: float) -> np.ndarray:
    return (scores >= lower) & (scores < upper)


def shares(sets: list[tuple[np.ndarray, np.ndarray]], lower: float, upper: float) -> str:
    """Each set's answers in [lower, upper) and the share of them that are right."""
    return ", ".join(f"{int(b.sum())} answers, {right[b].mean():.2f} right"
                     for b, right in ((band(sc, lower, upper), right) for sc, right in sets)
                     if b.any())


def between(scores: np.ndarray, cut: float) -> float:
    """Halfway from `cut` down to the next lower score seen: a level boundary no answer sits on
    ("high" is a score above level_high, "medium" one at or above level_medium)."""
    lower = scores[scores < cut]
    return round((cut + lower.max()) / 2, 4) if len(lower) else cut


def report(name: str, scores: np.ndarray, right: np.ndarray) -> str:
    order = np.argsort(-scores)
    steps = [n for n in (10, 20, 40, len(scores)) if n <= len(scores)]
    ladder = ", ".join(f"top {n}: {right[order][:n].mean():.2f} from {scores[order][n - 1]:.3f}"
                       for n in steps)
    return (f"{name}: {len(scores)} answers, {int(right.sum())} right, AUROC "
            f"{auroc(scores, right):.3f}, ECE {ece(scores, right):.3f}; {ladder}")


def fit(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None
        ) -> tuple[np.ndarray, float]:
    model = LogisticRegression(C=1.0, max_iter=5000).fit(design(x), y, sample_weight=weight)
    return model.coef_[0], float(model.intercept_[0])


def score(x: np.ndarray, weights: np.ndarray, bias: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-(design(x) @ weights + bias)))


def per_book_calibration(data: list[tuple[np.ndarray, np.ndarray]], weights: np.ndarray,
                         bias: float) -> tuple[np.ndarray, float]:
    """The fitted score times a factor plus an offset (its order, so its AUROC, unchanged),
    chosen on a grid for the smallest calibration error of the worse-calibrated book."""
    grid = [(a, c) for a in np.arange(0.5, 2.501, 0.05) for c in np.arange(-1.5, 1.5, 0.02)]
    factor, offset = min(grid, key=lambda g: max(
        ece(score(xs, weights * g[0], bias * g[0] + g[1]), ys) for xs, ys in data))
    return weights * factor, float(bias * factor + offset)


def fit_books(data: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, float]:
    """Fitted on every book's answers, each book weighing the same however many questions its
    sets have."""
    x = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    equal = np.concatenate([np.full(len(d[1]), len(y) / (len(data) * len(d[1]))) for d in data])
    return fit(x, y, equal)


def fit_all(data: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, float]:
    """fit_books(), then rescaled per book (per_book_calibration): what the app's weights are."""
    return per_book_calibration(data, *fit_books(data))


def out_of_fold(data: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """Each answer's score from the model fitted (fit_all) without its set (a fifth of it, for a
    book with one set): what the levels are cut on, since cuts chosen on the scores of the
    answers fitted on promise more than new answers keep (on 2026-11-28, "high" cut in sample
    was right for 82-85 % of the answers of each development set left out, against 90 %
    promised)."""
    out = [np.zeros(len(y)) for _, y, _ in data]
    for name in sorted({g for _, _, groups in data for g in groups}):
        train = [(x[groups != name], y[groups != name]) for x, y, groups in data]
        weights, bias = fit_all([(x, y) for x, y in train if len(y)])
        for (x, _, groups), scores in zip(data, out, strict=True):
            held = groups == name
            if held.any():
                scores[held] = score(x[held], weights, bias)
    return out


def levels(scores: np.ndarray, high: float, medium: float) -> list[np.ndarray]:
    """Which answers are "high" (at or above `high`), "medium" and "low" (band())."""
    return [band(scores, high, float("inf")), band(scores, medium, high),
            band(scores, float("-inf"), medium)]


def level_cells(parts: list[np.ndarray], right: np.ndarray) -> list[str]:
    """Right of answered per level (levels()), with the share."""
    return [f"{int(right[m].sum())}/{int(m.sum())}" + (f" ({right[m].mean():.2f})" if m.any()
                                                        else "")
            for m in parts]


def by_book(grouped: list[tuple[np.ndarray, np.ndarray, np.ndarray]], names: list[str]) -> None:
    """Each book scored by the model fitted and cut without it (rescaled with fit_all, levels
    cut with cut_off on the other books' scores), beside the shipped weights and cut-offs."""
    shipped = load_settings()
    print("| book | answers (right) | AUROC: shipped -> left out | ECE: shipped -> left out | "
          "high right | medium right | low right | medium above low |")
    print("|---|---|---|---|---|---|---|---|")
    for b, (x, y, _) in enumerate(grouped):
        train = [(xs, ys) for i, (xs, ys, _) in enumerate(grouped) if i != b]
        weights, bias = fit_all(train)
        seen = [(np.round(score(xs, weights, bias), 4), ys) for xs, ys in train]
        high = cut_off(seen, HIGH_TARGET)
        high = float("inf") if high is None else high
        medium = cut_off(seen, MEDIUM_TARGET, high)
        medium = high if medium is None else medium
        mine = np.round(score(x, weights, bias), 4)
        today = np.array([answer_probability(*arguments(row)) for row in x])
        parts = levels(mine, high, medium)
        cells = level_cells(parts, y)
        above = "—" if not parts[1].any() or not parts[2].any() else \
            ("yes" if y[parts[1]].mean() >= y[parts[2]].mean() else "**no**")
        print(f"| {names[b]} | {len(y)} ({int(y.sum())}) | {auroc(today, y):.3f} -> "
              f"{auroc(mine, y):.3f} | {ece(today, y):.3f} -> {ece(mine, y):.3f} | "
              f"{' | '.join(cells)} | {above} |")
        as_shipped = levels(today, shipped.level_high, shipped.level_medium)
        print(f"|  shipped cuts ({shipped.level_high:g} / {shipped.level_medium:g}) | | | | "
              f"{' | '.join(level_cells(as_shipped, y))} | |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--by-book", action="store_true",
                        help="leave one book out at a time and report each book out of fold")
    parser.add_argument("--index-root", type=Path, default=None,
                        help="where each book's index is built or reused (DIR/<book folder>)")
    args = parser.parse_args()
    sets = [(book, [q for q in qs if q.exists()]) for book, qs in DEFAULT_SETS if book.exists()]
    grouped = [collect(*s, index_root=args.index_root) for s in sets]
    data = [(x, y) for x, y, _ in grouped]
    names = [f"{book.name} ({len(qs)} sets)" for book, qs in sets]
    if args.by_book:
        by_book(grouped, names)
        return 0
    today = [(np.array([answer_probability(*arguments(row)) for row in xs]), ys)
             for xs, ys in data]
    for name, (sc, ys) in zip(names, today, strict=True):
        print(report(f"today's weights, {name}", sc, ys))
    if len(data) == 2:
        for a, b in ((0, 1), (1, 0)):
            weights, bias = fit(*data[a])
            print(report(f"fit on {names[a]}, scored on {names[b]}",
                         score(data[b][0], weights, bias), data[b][1]))
    x = np.vstack([d[0] for d in data])
    y = np.concatenate([d[1] for d in data])
    weights, bias = fit_books(data)
    for name, (xs, ys) in zip(names, data, strict=True):
        print(report(f"fit on all, scored on {name}", score(xs, weights, bias), ys))
    print(report("fit on all, both sets", score(x, weights, bias), y))
    weights, bias = per_book_calibration(data, weights, bias)
    for name, (xs, ys) in zip(names, data, strict=True):
        print(report(f"rescaled for each book, scored on {name}", score(xs, weights, bias), ys))
    print(f"WEIGHTS = dict(zip(FEATURES, ({', '.join(f'{w:.3f}' for w in weights)}), "
          "strict=True))")
    print(f"BIAS = {bias:.3f}")
    # the levels are cut on out-of-fold scores (each set's answers scored by the model fitted
    # without that set), rounded as a Response is
    shown = [(np.round(sc, 4), ys) for sc, (_, ys) in zip(out_of_fold(grouped), data,
                                                          strict=True)]
    for name, (sc, ys) in zip(names, shown, strict=True):
        print(report(f"out of fold (each set left out), {name}", sc, ys))
    scores = np.concatenate([sc for sc, _ in shown])
    high = cut_off(shown, HIGH_TARGET)
    if high is None:
        print("level_high: no score reaches 90 % on every set")
        high = float("inf")
    else:
        print(f"level_high = {between(scores, high):.4f} (from {high:.4f}: "
              f"{shares(shown, high, float('inf'))})")
    medium = cut_off(shown, MEDIUM_TARGET, high)
    if medium is None:
        print("level_medium: no band below 'high' reaches 70 % on every set")
    else:
        print(f"level_medium = {between(scores, medium):.4f} (from {medium:.4f} to 'high': "
              f"{shares(shown, medium, high)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
