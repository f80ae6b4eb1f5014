"""Where the book holds a key fact an answer lacks, on the sample book's real index and answers:
facts are taken from the book's own units around a real answer, so each place is known."""

from __future__ import annotations

import dataclasses

import pytest

from rag.answer.pipeline import Pipeline
from rag.tuning.answers import answer_pass, outcome_of, summarise_answers
from rag.tuning.fact_places import (
    CITED,
    EVIDENCE,
    NO_UNIT,
    NOT_RETRIEVED,
    PLACES,
    FactPlace,
    locate_missing,
    place_counts,
)
from rag.tuning.questions import Question
from tests.builders import make_error_response

QUESTION = "Why does a motor buzz with a high derivative gain?"


@pytest.fixture(scope="module")
def offline(sample_index, sample_settings) -> Pipeline:
    return Pipeline(sample_index, sample_settings, llm=None, audit=None)


@pytest.fixture(scope="module")
def answered(offline):
    response = offline.answer(QUESTION)
    assert response.status in ("success", "partial") and response.draft.sources
    return response


def _title(index, key: str) -> str:
    return next(c.section_title for c in index.chunks if c.section_key == key)


def _unquoted_unit(index, key: str, quotes) -> str:
    """A unit of section `key` that the answer does not quote and no other section repeats."""
    table = index.sentences
    for row in table.rows_for(key):
        text = table.texts[row]
        if text not in quotes and len(text.split()) >= 6 and \
                sum(t == text for t in table.texts) == 1:
            return text
    raise AssertionError(f"no usable unit in {key}")


def test_each_fact_is_placed_where_the_book_holds_it(answered, sample_index):
    draft, table = answered.draft, sample_index.sentences
    keys = [h.chunk.section_key for h in draft.sources]
    cited = [k for i, k in enumerate(keys) if f"S{i + 1}" in draft.markers]
    uncited = [k for k in keys if k not in cited]
    assert cited and uncited  # the evidence reaches beyond what the answer quotes
    elsewhere = next(k for k in table.by_section if k not in keys)
    facts = [_unquoted_unit(sample_index, cited[0], draft.quotes),
             _unquoted_unit(sample_index, uncited[0], draft.quotes),
             _unquoted_unit(sample_index, elsewhere, draft.quotes),
             "marmalade quantum zebra"]
    places = locate_missing(facts, answered, sample_index)
    assert places == (FactPlace(facts[0], CITED, _title(sample_index, cited[0])),
                      FactPlace(facts[1], EVIDENCE, _title(sample_index, uncited[0])),
                      FactPlace(facts[2], NOT_RETRIEVED, _title(sample_index, elsewhere)),
                      FactPlace(facts[3], NO_UNIT, ""))
    assert places[0].describe() == (f"{facts[0]}: in a cited section, not quoted "
                                    f"({_title(sample_index, cited[0])})")
    assert places[3].describe() == "marmalade quantum zebra: in no single unit of the book"


def test_a_fact_split_across_two_units_is_in_no_unit(answered, sample_index):
    table = sample_index.sentences
    key = next(k for k, rows in table.by_section.items() if len(rows) >= 2)
    first, second = (table.texts[r] for r in table.rows_for(key)[:2])
    across = " ".join([*first.split()[-2:], *second.split()[:2]])
    assert locate_missing([across], answered, sample_index)[0].place == NO_UNIT


def test_facts_are_matched_as_answers_are(answered, sample_index):
    """Case, dashes and markdown do not hide a fact; word edges hold ("ODE" is not in "node")."""
    draft = answered.draft
    cited = draft.sources[int(draft.markers[0][1:]) - 1].chunk.section_key
    unit = _unquoted_unit(sample_index, cited, draft.quotes)
    shouted = "**" + unit.upper().replace(" ", "  ") + "**"
    assert locate_missing([shouted], answered, sample_index)[0].place == CITED
    assert locate_missing(["ODE"], answered, sample_index)[0].place == NO_UNIT


def test_a_fact_with_wordings_is_placed_by_the_one_the_book_holds(answered, sample_index):
    draft = answered.draft
    cited = draft.sources[int(draft.markers[0][1:]) - 1].chunk.section_key
    unit = _unquoted_unit(sample_index, cited, draft.quotes)
    for fact in (f"marmalade quantum zebra | {unit}", f"{unit} | marmalade quantum zebra"):
        assert locate_missing([fact], answered, sample_index)[0] == \
            FactPlace(fact, CITED, _title(sample_index, cited))


def test_without_evidence_a_book_fact_was_not_retrieved(sample_index, answered):
    unit = sample_index.sentences.texts[0]
    place = locate_missing([unit], make_error_response(), sample_index)[0]
    assert place.place == NOT_RETRIEVED and place.section
    assert locate_missing([], answered, sample_index) == ()


def test_a_claude_answer_cites_the_retrieval_hits(answered, sample_index):
    """A draft without sources of its own (Claude's) names the retrieval's hits S1, S2, ..."""
    second = answered.retrieval.hits[1].chunk.section_key
    claude = dataclasses.replace(answered, draft=dataclasses.replace(
        answered.draft, sources=(), markers=("S2",), quotes=()))
    fact = _unquoted_unit(sample_index, second, ())
    assert locate_missing([fact], claude, sample_index) == (
        FactPlace(fact, CITED, _title(sample_index, second)),)


def test_without_units_kept_with_the_index_no_place_is_told(answered, sample_index):
    bare = dataclasses.replace(sample_index, sentences=None, derived={})
    assert locate_missing(["5 cm"], answered, bare) == ()


def test_the_answer_pass_records_places_for_what_is_missing(offline, sample_settings,
                                                             sample_index, answered):
    lacking = Question(QUESTION, (), True, "factual", 1, ("marmalade quantum zebra",))
    outcome = answer_pass(offline, [lacking], sample_settings, sample_settings.w_dense,
                          sample_settings.threshold)[0]
    assert not outcome.correct
    assert outcome.fact_places == (FactPlace("marmalade quantum zebra", NO_UNIT, ""),)
    assert outcome.to_dict()["missing_fact_places"] == [
        {"fact": "marmalade quantum zebra", "place": NO_UNIT, "section": ""}]
    held = Question(QUESTION, (), True, "factual", 1, (answered.draft.quotes[0],))
    right = outcome_of(held, answered, 1.0, sample_index)
    assert right.correct and right.fact_places == ()  # nothing missing, nothing to place
    out_of_scope = outcome_of(Question(QUESTION, (), False, "factual", 1), answered, 1.0,
                              sample_index)
    assert out_of_scope.fact_places == ()
    summary = summarise_answers([outcome, right])
    assert summary["missing_fact_places"] == {CITED: 0, EVIDENCE: 0, NOT_RETRIEVED: 0,
                                              NO_UNIT: 1}


def test_counts_name_every_place():
    assert place_counts([]) == dict.fromkeys(PLACES, 0)
    assert place_counts([FactPlace("a", EVIDENCE), FactPlace("b", EVIDENCE)])[EVIDENCE] == 2
