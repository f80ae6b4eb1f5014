"""The project's labelled question sets by book, each a development set (its answers have been
read, or a model, rule or cut-off was fitted or chosen on it) or held out (only its aggregate
figures are ever looked at: the honest measure of questions Folio has not seen).
bench/fit_extractive.py, bench/fit_confidence.py and bench/quality.py take them from here, so a
set changes role in one place.

physical-ai-blind.yaml and physical-ai-blind2.yaml were held out until their answers were read
on 2026-11-24; physical-ai-blind3.yaml, physical-ai-blind4.yaml and physical-ai-blind5.yaml
until theirs were read on 2026-11-28 (their aggregates had decided four changes by then, so
they no longer measured new questions). physical-ai-dev6.yaml was written the same way on other
sections as a development set: its answers are read. physical-ai-values.yaml (2026-11-28) asks
for values of kinds rag.answer.quantity did not check yet, and physical-ai-oos2.yaml (the same day,
20 out-of-scope questions on the book's topic) measures false answers on questions none of the
rules was made for: development sets from the start.
physical-ai-quantities.yaml and physical-ai-blind6.yaml (written blind on 2026-11-28, on
sections no other set asks about) are held out.
The three books of other kinds (issue 41: an API reference, a math-heavy textbook, a prose style
guide) each have a development set and a held-out one on other sections, all written on
2026-11-29 before Folio had answered on those books: fastapi.yaml / fastapi-blind.yaml,
d2l.yaml / d2l-blind.yaml, content-guide.yaml / content-guide-blind.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "data" / "eval"
SAMPLE_BOOK = ROOT / "data" / "book"
SHARED_DATA = ROOT.parent / "shared" / "data"
PHYSICAL_AI = SHARED_DATA / "physical-ai-book"
FASTAPI = SHARED_DATA / "fastapi-docs"
D2L = SHARED_DATA / "d2l-book"
CONTENT_GUIDE = SHARED_DATA / "content-guide"
DEVELOPMENT, HELD_OUT = "development", "held out"

BOOKS: list[tuple[Path, dict[str, str]]] = [
    (SAMPLE_BOOK, {"questions.yaml": DEVELOPMENT}),
    (PHYSICAL_AI, {
        **{f"physical-ai{part}.yaml": DEVELOPMENT for part in (
            "", "-heldout", "-train1", "-train2", "-blind", "-blind2", "-oos", "-parts",
            "-dev6", "-blind3", "-blind4", "-blind5", "-values", "-oos2")},
        **{f"physical-ai{part}.yaml": HELD_OUT for part in ("-quantities", "-blind6")}}),
    (FASTAPI, {"fastapi.yaml": DEVELOPMENT, "fastapi-blind.yaml": HELD_OUT}),
    (D2L, {"d2l.yaml": DEVELOPMENT, "d2l-blind.yaml": HELD_OUT}),
    (CONTENT_GUIDE, {"content-guide.yaml": DEVELOPMENT, "content-guide-blind.yaml": HELD_OUT}),
]


def sets_of(book: Path, role: str) -> list[Path]:
    """The book's sets in that role, in the order above (existing or not)."""
    return [EVAL / name for b, sets in BOOKS if b == book for name, r in sets.items()
            if r == role]


def development_books() -> Iterator[tuple[Any, Any, Any, list]]:
    """(settings, index, offline pipeline, development questions) for each book whose folder
    and development sets are present: what bench/phrasing.py and bench/follow_ups.py ask."""
    from rag.config import load_settings
    from rag.index.load import load_index
    from rag.tuning.evaluate import evaluation_pipeline
    from rag.tuning.questions import load_questions

    for book, sets in BOOKS:
        files = [EVAL / f for f, role in sets.items()
                 if role == DEVELOPMENT and (EVAL / f).exists()]
        if not book.exists() or not files:
            continue
        settings = load_settings(book_dir=book, llm="extractive")
        index, _ = load_index(settings)
        yield (settings, index, evaluation_pipeline(index, settings),
               [q for f in files for q in load_questions(f)])
