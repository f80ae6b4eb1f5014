"""The project's labelled question sets by book, each a development set (its answers have been
read, or a model, rule or cut-off was fitted or chosen on it) or held out (only its aggregate
figures are ever looked at: the honest measure of questions Folio has not seen).
bench/fit_extractive.py, bench/fit_confidence.py and bench/quality.py take them from here, so a
set changes role in one place.

physical-ai-blind.yaml and physical-ai-blind2.yaml were held out until their answers were read
on 2026-11-24; physical-ai-blind3.yaml, physical-ai-blind4.yaml and physical-ai-quantities.yaml
are held out.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "data" / "eval"
SAMPLE_BOOK = ROOT / "data" / "book"
PHYSICAL_AI = ROOT.parent / "shared" / "data" / "physical-ai-book"
DEVELOPMENT, HELD_OUT = "development", "held out"

BOOKS: list[tuple[Path, dict[str, str]]] = [
    (SAMPLE_BOOK, {"questions.yaml": DEVELOPMENT}),
    (PHYSICAL_AI, {
        **{f"physical-ai{part}.yaml": DEVELOPMENT for part in (
            "", "-heldout", "-train1", "-train2", "-blind", "-blind2", "-oos")},
        **{f"physical-ai{part}.yaml": HELD_OUT for part in (
            "-blind3", "-blind4", "-quantities")}}),
]


def sets_of(book: Path, role: str) -> list[Path]:
    """The book's sets in that role, in the order above (existing or not)."""
    return [EVAL / name for b, sets in BOOKS if b == book for name, r in sets.items()
            if r == role]
