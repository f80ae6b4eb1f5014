"""What an answer keeps of the passage it was given (pages.components.chat.view.kept_passage):
the whole passage when short, the stretches around the quoted sentences when long."""

from __future__ import annotations

from pages.components.chat.view import PASSAGE_CONTEXT, PASSAGE_KEPT, kept_passage

FILLER = "The joint holds its position while the controller waits. "


def test_a_short_passage_is_kept_whole() -> None:
    assert kept_passage("  " + FILLER * 10 + "  ", []) == (FILLER * 10).strip()


def test_a_long_passage_keeps_what_the_answer_quoted() -> None:
    quoted = "Absolute encoders report the angle at power-up."
    text = FILLER * 100 + quoted + " " + FILLER * 100
    kept = kept_passage(text, [quoted])
    assert quoted in kept and kept.startswith("… ") and kept.endswith(" …")
    assert len(kept) <= 2 * PASSAGE_CONTEXT + len(quoted) + 4 < len(text)


def test_a_long_passage_without_quotes_keeps_its_start() -> None:
    text = FILLER * 200
    kept = kept_passage(text, [])
    assert kept.startswith(FILLER) and kept.endswith(" …")
    assert len(kept) <= PASSAGE_KEPT + 2
