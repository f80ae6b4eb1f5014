"""Stage 3, offline: an answer made of the book's own sentences, each cited (nothing invented).

Evidence is sentence-level: every quotable unit (rag.book.sentences) of the top sections — all of
a section's text, not only the chunk retrieval kept — plus the other sections that passed the
threshold, scored against the question by meaning (sentence vectors kept with the index), by the
question's rarer words, by the shape of answer the question wants (rag.answer.shape) and by the
section's retrieval score, combined by a model fitted on labelled questions
(rag.answer.unit_scoring). The best unit leads; up to two neighbours that also score well follow.
When no unit supports the question, the draft says the excerpts do not cover it: a nearby
sentence is not an answer. The best unit's probability of holding the answer is the draft's
generation confidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rag.answer.evidence import EvidenceUnit, gather_sources, source_units
from rag.answer.llm import NOT_COVERED_SENTENCE
from rag.answer.shape import wants_list
from rag.answer.unit_scoring import idf_weights, unit_features, unit_probabilities
from rag.index.lexical import tokenize
from rag.index.sentences import SentenceTable
from rag.types import Draft, Hit

EXTRACTIVE = "extractive"
SUPPORT_FLOOR = 0.12  # below this probability the best unit does not answer: refuse
# A unit near the best one (same section, within NEAR units) joins it at this share of the best
# probability, one elsewhere at FAR_RELATIVE; chosen on the labelled sets (0.3 answered 6-9
# points more questions fully than 0.6: key facts often sit in the next sentence or two).
EXTRA_RELATIVE, FAR_RELATIVE = 0.30, 0.90
LIST_RELATIVE = 0.25  # the other items of a list the question asks for
NEAR = 4  # "near" = within this many units of the best one in its section
MAX_WORDS = 110  # 1-3 units, but never a wall of text

Embed = Callable[[list[str]], np.ndarray]


@dataclass(frozen=True)
class Scored:
    unit: EvidenceUnit
    probability: float  # that this unit holds the answer (rag.answer.unit_scoring)


def choose(scored: list[Scored], max_units: int, as_list: bool) -> list[Scored]:
    """The best unit, then up to max_units - 1 close ones: its neighbours in the same section,
    or (for list questions) the other items of its list; best first, the rest in book order."""
    ranked = sorted(scored, key=lambda s: (-s.probability, s.unit.source, s.unit.position))
    best = ranked[0]
    chosen, words = [best], len(best.unit.text.split())
    for s in ranked[1:]:
        if len(chosen) >= max_units:
            break
        same_section = s.unit.source == best.unit.source
        same_list = as_list and same_section and s.unit.block == best.unit.block and \
            s.probability >= best.probability * LIST_RELATIVE
        near = same_section and abs(s.unit.position - best.unit.position) <= NEAR
        close = s.probability >= best.probability * (EXTRA_RELATIVE if near else FAR_RELATIVE)
        size = len(s.unit.text.split())
        if (same_list or close) and words + size <= MAX_WORDS:
            chosen.append(s)
            words += size
    return [chosen[0], *sorted(chosen[1:], key=lambda s: (s.unit.source, s.unit.position))]


def extractive_draft(question: str, hits: Sequence[Hit], candidates: Sequence[Hit] = (),
                     table: SentenceTable | None = None, query_vector: np.ndarray | None = None,
                     embed: Embed | None = None, max_sentences: int = 3) -> Draft:
    """The book's own units that answer the question, each with its marker; deterministic.

    `table` holds the book's sentence vectors; units of a source without rows there (a pasted
    selection, an index built before sentence vectors) are embedded with `embed`, or scored by
    words alone when the question has no vector (the embedder is down)."""
    sources = gather_sources(hits, candidates)
    units, vectors = source_units(sources, table, embed if query_vector is not None else None)
    if not units:
        return _draft("", (), (), (), sources, None)
    best_blended = max(h.blended for h in sources) or 1.0
    priors = [h.blended / best_blended for h in sources]
    features = unit_features(question, units, vectors, query_vector,
                             idf_weights(table, set(tokenize(question))), priors)
    if query_vector is None:  # no meaning to go by: let the words stand in for it
        features[:, 0] = features[:, 1] * 0.6
    probabilities = unit_probabilities(features)
    scored = [Scored(u, round(float(p), 6)) for u, p in zip(units, probabilities, strict=True)]
    chosen = choose(scored, max(1, max_sentences), wants_list(question))
    confidence = round(chosen[0].probability, 4)
    if confidence < SUPPORT_FLOOR:
        return _draft(NOT_COVERED_SENTENCE, (), (), (), sources, confidence)
    parts = [f"{s.unit.text} [S{s.unit.source + 1}]" for s in chosen]
    markers = tuple(dict.fromkeys(f"S{s.unit.source + 1}" for s in chosen))
    return _draft(" ".join(parts), markers, tuple(s.unit.text for s in chosen),
                  tuple(s.probability for s in chosen), sources, confidence)


def _draft(text: str, markers: tuple[str, ...], quotes: tuple[str, ...],
           supports: tuple[float, ...], sources: Sequence[Hit], confidence: float | None
           ) -> Draft:
    return Draft(text=text, markers=markers, generation_confidence=confidence,
                 provider=EXTRACTIVE, model=EXTRACTIVE, prompt="", raw_response=text,
                 quotes=quotes, sources=tuple(sources), supports=supports)
