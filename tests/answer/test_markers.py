"""Labels a model writes ([S1]) read as citations: which text is the claim, which excerpts it
names, and which of their sentences it is held to."""

from __future__ import annotations

import pytest

from rag.answer.markers import label_numbers, read_labels, split_claim, supporting_spans
from rag.providers.base import CitedSpan, ReplyBlock

EXCERPTS = ("Proportional action alone leaves an offset. The integral term removes steady-state "
            "error by summing it over time. Too much integral gain makes the joint overshoot.",
            "Derivative action damps fast motion.")
INTEGRAL = "The integral term removes steady-state error by summing it over time."


def span(index: int, text: str) -> CitedSpan:
    start = EXCERPTS[index].index(text)
    return CitedSpan(index, start, start + len(text), text)


@pytest.mark.parametrize(("labels", "numbers"), [
    (" [S1]", [1]), ("[s2]", [2]), (" (S1)", [1]), ("[S 3]", [3]), ("[S1][S3]", [1, 3]),
    ("[S1], [S3]", [1, 3]), ("[S1, S3]", [1, 3]), ("[S1; S2]", [1, 2]), ("[S1 and S2]", [1, 2]),
    ("[S1-S3]", [1, 2, 3]), ("[S2–S4]", [2, 3, 4]), ("[Source: S2]", [2]), ("[S1][S1]", [1]),
    ("[S1-S999]", [1, 999]),  # no range a model means: its two ends
])
def test_label_forms_models_write(labels: str, numbers: list[int]) -> None:
    (block,) = [b for b in read_labels("Integral action sums error" + labels, EXCERPTS)
                if b.spans]
    assert label_numbers(labels) == numbers
    assert [s.document_index + 1 for s in block.spans][:1] == numbers[:1]


@pytest.mark.parametrize(("segment", "lead", "claim"), [
    ("The integral term removes error", "", "The integral term removes error"),
    ("In short: it works. The integral term removes error.", "In short: it works. ",
     "The integral term removes error."),  # a label after the full stop cites its sentence
    (", and derivative action damps motion", ", and ", "derivative action damps motion"),
    ("\n- Derivative action damps motion", "\n- ", "Derivative action damps motion"),
    (".\n", ".\n", ""),
])
def test_the_claim_is_the_text_since_the_last_sentence_break(segment: str, lead: str,
                                                             claim: str) -> None:
    assert split_claim(segment) == (lead, claim)


def test_a_claim_is_held_to_the_sentences_of_its_excerpt_that_share_its_terms() -> None:
    assert supporting_spans("The integral term removes steady-state error", 1, EXCERPTS) == (
        span(0, INTEGRAL),)
    # two sentences between them cover more of the claim than either alone
    assert supporting_spans("The integral term removes offset and can overshoot", 1,
                            EXCERPTS) == (span(0, "Proportional action alone leaves an offset."),
                                          span(0, INTEGRAL),
                                          span(0, "Too much integral gain makes the joint "
                                                  "overshoot."))


def test_an_excerpt_sharing_nothing_is_cited_whole_and_a_missing_one_is_named() -> None:
    assert supporting_spans("Gravity pulls the torso downward", 2, EXCERPTS) == (
        CitedSpan(1, 0, len(EXCERPTS[1]), EXCERPTS[1]),)
    assert supporting_spans("Gravity pulls the torso downward", 9, EXCERPTS) == (
        CitedSpan(8, 0, 0, ""),)


def test_a_reply_becomes_claims_citing_spans_and_uncited_text_between() -> None:
    reply = ("The integral term removes steady-state error [S1], and derivative action damps "
             "motion [S2].\nConfidence: 0.9")
    assert read_labels(reply, EXCERPTS) == [
        ReplyBlock("The integral term removes steady-state error", (span(0, INTEGRAL),)),
        ReplyBlock(", and "),
        ReplyBlock("derivative action damps motion", (span(1, EXCERPTS[1]),)),
        ReplyBlock(".\nConfidence: 0.9")]
    assert "".join(b.text for b in read_labels(reply, EXCERPTS)) == reply.replace(
        " [S1]", "").replace(" [S2]", "")


def test_a_reply_without_labels_is_one_uncited_block() -> None:
    assert read_labels("The integral term removes error.", EXCERPTS) == [
        ReplyBlock("The integral term removes error.")]
    assert read_labels("[S1] opens the reply.", EXCERPTS) == [ReplyBlock(" opens the reply.")]
