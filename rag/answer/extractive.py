"""Stage 3, offline: an answer made of the book's own sentences, each cited (nothing invented).

Evidence is sentence-level: every quotable unit (rag.book.sentences) of the top sections — all of a
section's text, not only the chunk retrieval kept — plus the other sections that passed the
threshold, scored against the question by meaning (sentence vectors kept with the index), by the
question's rarer words, by the shape of answer the question wants (rag.answer.shape) and by the
section's retrieval score, combined by a model fitted on labelled questions
(rag.answer.unit_scoring). A unit that answers a question the book itself asks (a review question,
a FAQ or troubleshooting heading: rag.book.quiz) is as close in meaning as the closer of itself and
that question. Which units are quoted, and in what order, is rag.answer.quotes: the best unit
leads, up to two more that also score well follow, from near it in its section or from another
section; their neighbours fill the answer's word budget (rag.answer.window). Each rule here has
earned its place in bench/ablation.py's table (docs/answering.md); the rules that earned nothing on
any book were deleted. When no unit supports the question, or the best is weak and the quotes hold
little of what the question asks (its topic, not its answer), the draft says the excerpts do not
cover it: a nearby sentence is not an answer; unless retrieval's first section is very close in
meaning to the question (CLOSE_SECTION), where a weak best unit means the reader words it
otherwise. A question that asks for a measured quantity (a payload, a torque, a year:
rag.answer.quantity) is answered only by quotes that state one of that kind (in a section that
mentions the rare name it asks about, if it names one): led by the likeliest unit that does, if any
reaches the support floor, or else refused, naming what the passages do not give; "What's the
difference between X and Y?" by the book's definitions of X and of Y, when it defines both (refused
before, as each alone scored low against a question naming two things: development answers holding
every key fact 186 -> 190 of 298, no other answer worse). The draft's generation confidence is the
probability that the answer is right, from the best unit's probability, its lead over the runner-
up, the share of the evidence the answer leaves unquoted, whether the question asks for a number or
a definition, how much of the question the quotes cover, whether the leading unit is in retrieval's
first section and whether it came closer through the book's own question (rag.answer.correctness);
it is the answer's whole confidence score. The units that scored next are kept with the draft
(Draft.more) and shown under the answer as more from the book; under a refusal, the units that came
closest, as what the book says nearest to the question (not an answer).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from rag.answer import quantity
from rag.answer.correctness import answer_probability
from rag.answer.evidence import (
    gather_sources,
    source_units,
    with_definitions,
    with_entries,
)
from rag.answer.llm import NOT_COVERED_SENTENCE
from rag.answer.passages import PASSAGE, whole_section
from rag.answer.quotes import (
    MAX_WORDS,
    SUPPORT_FLOOR,
    Scored,
    choose,
    defined_pair,
    in_named_part,
    led_by,
    placements,
    prerequisites,
    section_terms,
)
from rag.answer.restated import restated_shares
from rag.answer.shape import (
    asks_specific,
    compared_subjects,
    question_subject,
)
from rag.answer.tuned import (
    CLOSE_SECTION,
    COVERAGE_FLOOR,
    MORE,
    MORE_SHARE,
    WEAK_SUPPORT,
)
from rag.answer.unit_scoring import (
    idf_weights,
    unit_cosines,
    unit_features,
    unit_probabilities,
)
from rag.answer.window import fill_around
from rag.book.sentences import HEADING
from rag.index.lexical import tokenize
from rag.index.sentences import SentenceTable
from rag.retrieval.parts import (
    asks_overview,
    is_entry,
    part_words,
)
from rag.types import Draft, Hit

EXTRACTIVE = "extractive"
Embed = Callable[[list[str]], np.ndarray]


def extractive_draft(question: str, hits: Sequence[Hit], candidates: Sequence[Hit] = (),
                     table: SentenceTable | None = None, query_vector: np.ndarray | None = None,
                     embed: Embed | None = None, max_sentences: int = 3) -> Draft:
    """The book's own units that answer the question, each with its marker; deterministic.

    `table` holds the book's sentence vectors; units of a source without rows there (a pasted
    selection, an index built before sentence vectors) are embedded with `embed`, or scored by
    words alone when the question has no vector (the embedder is down)."""
    compared = compared_subjects(question)  # "How is X different from Y?": (X, Y), else ()
    subject = "" if compared else question_subject(question)  # "What is X?": X, else ""
    overview = asks_overview(question)  # "What will I learn in week 9?": its parts
    sources = with_entries(with_definitions(gather_sources(hits, candidates), candidates,
                                            compared or (subject,), table),
                           candidates, overview, table)
    units, vectors, asked = source_units(sources, table,
                                         embed if query_vector is not None else None)
    if not units:
        return _draft("", (), (), (), sources, None)
    best_blended = max(h.blended for h in sources) or 1.0
    priors = [h.blended / best_blended for h in sources]
    stems = [tokenize(u.text) for u in units]  # once, for the features and for coverage
    idf = idf_weights(table, set(tokenize(question)))
    cosines, through_question = unit_cosines(units, vectors, query_vector, asked)
    features = unit_features(question, units, cosines, idf, priors, stems)
    if query_vector is None:  # no meaning to go by: let the words stand in for it
        features[:, 0] = features[:, 1] * 0.6
    # a unit that restates the question says nothing new (rag.answer.restated)
    probabilities = unit_probabilities(features) * restated_shares(
        set(tokenize(question)), stems, [u.text for u in units])
    scored = [Scored(u, round(float(p), 6), frozenset(s))
              for u, p, s in zip(units, probabilities, stems, strict=True)]
    count = max(1, max_sentences)
    placed = placements(sources, question)
    candidates = in_named_part(scored, placed, question)
    plain = chosen = choose(candidates, count, question)
    rule, listed = "", []  # why the quotes are not plain's, in words; the prerequisites
    if pair := defined_pair(scored, compared, question):  # read as asked, the likelier leads
        chosen = sorted(pair, key=lambda s: -s.probability)  # the confidence and the quotes
        rule = "the book's definitions of " + " and of ".join(f'"{c}"' for c in compared) + \
            ", the two things the question compares"
    elif listed := prerequisites(candidates, sources, chosen[0], count, question):
        chosen, rule = listed, "the book's prerequisites"
    # "What will I learn in week 9?" is led by the book's entry for week 9: a syllabus row or
    # item rather than a lesson's title ("Week 9 Lesson 1: ...")
    entries = [s for s in candidates if is_entry(s.unit.text, overview)] if overview else []
    entry = not pair and (max(entries, key=lambda s: (s.unit.kind != HEADING, s.probability))
                          if entries else None)
    if entry and entry is not chosen[0]:
        chosen = choose(candidates, count, question, entry)
        rule = f"the book's entry for {part_words(question)}"
    asked = quantity.asked_quantities(question)
    # a value counts where its section mentions the rare name asked about, if any (else in any)
    names = quantity.rare_names(question, idf) if asked else []
    named = quantity.named_sections(names, section_terms(scored)) if names else \
        set(range(len(sources)))
    if missing := quantity.missing(asked, [s.unit.text for s in chosen
                                           if s.unit.source in named]):
        # "What payload can X lift?" answered by a sentence that names X and no mass
        stated = led_by(candidates, count, question,
                        lambda u: u.source in named and not quantity.missing(asked, [u.text]))
        if stated is None:  # "give no speed (m/s, km/h) for Tesla's Optimus Gen 2"
            about = f" for {quantity.named_span(question, names)}" if names else ""
            return _refusal(sources, chosen[0].probability, scored,
                            tuple(m + about for m in missing))
        chosen, pair = stated, None
        rule = "a unit that states the value the question asks for: " + ", ".join(missing)
    # a quote placed in the part the question names holds its "module 3" where it sits
    best = chosen[0].probability
    covered = coverage(idf, chosen, tokenize(part_words(question))
                       if any(placed[s.unit.source] > 0 for s in chosen) else ())
    # a lead in the part the question names is about what it asks, in the book's words
    topic_only = covered < COVERAGE_FLOOR and placed[chosen[0].unit.source] <= 0
    weak = best < SUPPORT_FLOOR or (best < WEAK_SUPPORT and topic_only)
    if weak and sources[0].dense < CLOSE_SECTION and not pair and not entry and not listed:
        return _refusal(sources, best, scored)
    runner_up = max((s.probability for s in scored if s is not chosen[0]), default=0.0)
    unquoted = unquoted_share(scored, chosen)
    lead = next(n for n, s in enumerate(scored) if s is chosen[0])  # scored is in unit order
    lead_asked = chosen[0].unit.asked if through_question[lead] else ""
    # what is quoted: each quote's short section whole (rag.answer.passages), unless a rule chose
    # the quotes or one unit is asked for; the refusals and confidence inputs are the units'
    by_rule = bool(pair) or chosen != plain  # a pair is a rule's even where choose() agrees
    quoted = chosen if by_rule or count < 2 else whole_section(chosen, candidates)
    # then their neighbours in the lead's section while words are spare (rag.answer.window)
    shown = [] if by_rule or count < 2 else fill_around(candidates, quoted, MAX_WORDS)
    around = [s for s in shown if s not in quoted]
    confidence = answer_probability(best, runner_up, unquoted, asks_specific(question), covered,
                                    chosen[0].unit.source == 0, bool(lead_asked), len(quoted))
    parts = [f"{s.unit.text} [S{s.unit.source + 1}]" for s in pair or
             (shown if around else quoted)]
    quoted += around
    markers = tuple(dict.fromkeys(f"S{s.unit.source + 1}" for s in quoted))
    return _draft(" ".join(parts), markers, tuple(s.unit.text for s in quoted),
                  tuple(s.probability for s in quoted), sources,
                  round(confidence, 4), runner_up, unquoted, covered, lead_asked,
                  more_units(scored, quoted), led_by=rule if by_rule else "",
                  whole=tuple(s.unit.kind == PASSAGE for s in quoted),
                  around=tuple(s in around for s in quoted))


def more_units(scored: list[Scored], chosen: list[Scored], count: int = MORE
               ) -> tuple[tuple[str, int, float], ...]:
    """The `count` units that scored best after the quoted ones, best first (ties in
    book order), as (text, source, probability); none that a quote holds or repeats, none of a
    section quoted whole (rag.answer.passages), nor one under MORE_SHARE of the leading unit's
    probability. With nothing `chosen` (a refusal), the units that came closest, under the same
    floor below the best of them."""
    quoted = [s.unit.text.lower() for s in chosen]
    whole = {s.unit.source for s in chosen if s.unit.kind == PASSAGE}
    floor = max(s.probability for s in (chosen or scored)) * MORE_SHARE
    rest = sorted((s for s in scored if s not in chosen and
                   s.unit.source not in whole and s.probability >= floor and
                   not any(s.unit.text.lower() in q for q in quoted)),
                  key=lambda s: (-s.probability, s.unit.source, s.unit.position))
    return tuple((s.unit.text, s.unit.source, s.probability) for s in rest[:count])


def coverage(idf: dict[str, float], chosen: list[Scored], placed: Sequence[str] = ()) -> float:
    """The share of the question's terms, each weighted by its rarity in the book (`idf`, keyed
    by the question's terms), that the quoted units contain: an answer that never mentions a
    rare word of the question likely leaves a part of it unanswered. `placed`: terms the quotes
    hold by where they sit (the numbered part the question names, rag.retrieval.parts)."""
    total = sum(idf.values())
    quoted = frozenset(placed).union(*(s.stems for s in chosen))
    return round(sum(w for t, w in idf.items() if t in quoted) / total, 6) if total else 1.0


def unquoted_share(scored: list[Scored], chosen: list[Scored]) -> float:
    """How much of the evidence's summed unit probability the answer leaves out: where much
    of it lies outside the quotes, the answer is likelier to miss a part of the question."""
    total = sum(s.probability for s in scored)
    return round(1.0 - sum(s.probability for s in chosen) / total, 6) if total > 0 else 0.0


def _refusal(sources: Sequence[Hit], best: float, scored: list[Scored],
             unstated: tuple[str, ...] = ()) -> Draft:
    """The excerpts do not cover the question: no quote, the units that came closest kept to be
    shown as such, and the values the question asks for that they do not state."""
    return _draft(NOT_COVERED_SENTENCE, (), (), (), sources, round(best, 4),
                  more=more_units(scored, []), unstated=unstated)


def _draft(text: str, markers: tuple[str, ...], quotes: tuple[str, ...],
           supports: tuple[float, ...], sources: Sequence[Hit], confidence: float | None,
           runner_up: float | None = None, unquoted: float | None = None,
           covered: float | None = None, asked: str | None = None,
           more: tuple[tuple[str, int, float], ...] = (), unstated: tuple[str, ...] = (),
           led_by: str = "", whole: tuple[bool, ...] = (), around: tuple[bool, ...] = ()) -> Draft:
    """An answer (with the runner-up's probability: its confidence is calibrated) or a refusal
    (whose confidence is the best unit's probability, under the support floor)."""
    return Draft(text=text, markers=markers, generation_confidence=confidence,
                 provider=EXTRACTIVE, model=EXTRACTIVE, prompt="", raw_response=text,
                 quotes=quotes, sources=tuple(sources), supports=supports,
                 runner_up=runner_up, unquoted=unquoted, coverage=covered, asked=asked,
                 more=more, unstated=unstated, led_by=led_by, whole=whole, around=around,
                 calibrated=runner_up is not None)
