"""Units read around an answer's quotes (rag.answer.window.fill_around): the neighbours of the
lead's quotes in its section, likeliest first, while the answer has words to spare; the book's
order; the quotes from other sections kept as they were. Examples after an API reference
(FastAPI's numeric validations) and a style guide (the 18F Content Guide's plain language)."""

from __future__ import annotations

from rag.answer.evidence import EvidenceUnit
from rag.answer.extractive import extractive_draft
from rag.answer.quotes import MAX_WORDS, Scored
from rag.answer.window import BEFORE_SHARE, fill_around
from rag.book.sentences import HEADING, PROSE
from tests.builders import make_hit


def unit(source: int, position: int, text: str, probability: float, kind: str = PROSE) -> Scored:
    return Scored(EvidenceUnit(source, position, text, kind, 0, ("Section",)), probability,
                  frozenset(text.lower().split()))


API = [unit(0, 0, "Number validations", 0.05, HEADING),
       unit(0, 1, "Number validations also work for float values.", 0.30),
       unit(0, 2, "Here it is important to declare gt and not just ge.", 0.20),
       unit(0, 3, "With it you can require a value greater than 0, even if less than 1.", 0.60),
       unit(0, 4, "So 0.5 would be a valid value.", 0.25),
       unit(1, 0, "Query parameters can be validated too.", 0.40)]


def test_the_lead_is_read_with_its_neighbours_in_the_books_order():
    shown = fill_around(API, [API[3], API[5]], MAX_WORDS)
    assert [s.unit.text for s in shown] == [s.unit.text for s in (*API[1:5], API[5])]
    assert API[0] not in shown  # the section's title is not a sentence of the answer


def test_the_budget_takes_the_likeliest_neighbour_and_counts_one_before_for_less():
    lead = API[3]
    words = len(lead.unit.text.split())
    after = fill_around(API, [lead], words + 7)  # room for one of two
    assert after == [lead, API[4]]  # 0.25 after beats 0.20 before, never the budget
    assert 0.9 * BEFORE_SHARE > API[4].probability > API[2].probability * BEFORE_SHARE
    before_likelier = [*API[:2], unit(0, 2, "Declare gt and not just ge.", 0.9), *API[3:5]]
    assert fill_around(before_likelier, [lead], words + 7)[0].unit.position == 2
    assert fill_around(API, [lead], words) == [lead]  # no words to spare: as chosen


GUIDE = [unit(0, 1, "Plain language is writing your audience can understand the first time.",
              0.7),
         unit(0, 2, "It is the law for federal agencies under the Plain Writing Act of 2010.",
              0.3),
         unit(0, 3, "Write for the reader, not for the agency.", 0.2)]


def test_another_sections_quote_stays_after_the_lead_and_a_whole_passage_is_not_filled():
    other = unit(2, 4, "Avoid jargon.", 0.5)
    shown = fill_around(GUIDE, [GUIDE[0], other], MAX_WORDS)
    assert shown == [*GUIDE, other]
    passage = unit(0, 0, " ".join(s.unit.text for s in GUIDE), 0.7, "passage")
    assert fill_around(GUIDE, [passage], MAX_WORDS) == [passage]


def test_an_answer_names_what_was_read_around_its_quotes():
    text = ("## Plain language\n\nPlain language is writing your audience can understand the "
            "first time they read it. It is required by the Plain Writing Act of 2010 for every "
            "federal agency. Agencies report on it each year. Good plain language saves the "
            "reader time.")
    draft = extractive_draft("Which law requires plain language?", [make_hit(text, "plain")])
    assert "Plain Writing Act of 2010" in draft.text
    assert len(draft.around) == len(draft.quotes) and any(draft.around)
    assert sum(len(q.split()) for q in draft.quotes) <= MAX_WORDS
    assert draft.text.index("Plain language is") < draft.text.index("Plain Writing Act")
