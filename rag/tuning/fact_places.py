"""Where the book holds a key fact that an answer left out, so a wrong answer says whose fault it
is: the answerer's, retrieval's, or the label's.

Each missing fact is looked up in the book's units (rag.index.sentences), the units an offline
answer chooses from, in this order:
- CITED: a unit of a section the answer cites holds it; the answerer quoted other units there;
- EVIDENCE: a unit of another section of the answer's evidence (the selected sections and those
  that passed the threshold beyond top-k) holds it; the answerer chose elsewhere;
- NOT_RETRIEVED: a unit of the book holds it, in a section retrieval did not bring;
- NO_UNIT: no single unit holds it: the fact spans two units, is worded otherwise in the book,
  or is not in the book (a key fact to check).
Only the book's units are searched: a pasted passage is not one of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.answer.evidence import gather_sources
from rag.tuning.key_facts import fact_patterns, normalise_text

if TYPE_CHECKING:
    from rag.index.build import BookIndex
    from rag.types import Hit, Response

CITED, EVIDENCE, NOT_RETRIEVED, NO_UNIT = "cited", "evidence", "not_retrieved", "no_unit"
PLACES = (CITED, EVIDENCE, NOT_RETRIEVED, NO_UNIT)
PLACE_LABELS = {
    CITED: "in a cited section, not quoted",
    EVIDENCE: "elsewhere in the evidence, not chosen",
    NOT_RETRIEVED: "in a section retrieval did not bring",
    NO_UNIT: "in no single unit of the book",
}


@dataclass(frozen=True)
class FactPlace:
    fact: str
    place: str  # one of PLACES
    section: str = ""  # the title of the section that holds it, the best ranked of several

    def describe(self) -> str:
        where = PLACE_LABELS[self.place]
        return f"{self.fact}: {where}" + (f" ({self.section})" if self.section else "")

    def to_dict(self) -> dict[str, str]:
        return {"fact": self.fact, "place": self.place, "section": self.section}


def _normalised_units(index: BookIndex) -> list[str]:
    """The book's units, normalised as answers are; once per loaded index."""
    if "fact_units" not in index.derived:
        index.derived["fact_units"] = [normalise_text(t) for t in index.sentences.texts]
    return index.derived["fact_units"]


def _titles(index: BookIndex) -> dict[str, str]:
    if "section_titles" not in index.derived:
        index.derived["section_titles"] = {c.section_key: c.section_title for c in index.chunks
                                           if c.source == "book"}
    return index.derived["section_titles"]


def _sections_of(hits: Iterable[Hit]) -> list[str]:
    return list(dict.fromkeys(h.chunk.section_key for h in hits if h.chunk.source == "book"))


def _place(holding: list[str], cited: list[str], others: list[str], ranked: list[str]
           ) -> tuple[str, str]:
    """The first place with a section among `holding` (the sections whose units hold the fact);
    not retrieved, the one retrieval ranked best, else the first in the book."""
    for place, keys in ((CITED, cited), (EVIDENCE, others), (NOT_RETRIEVED, ranked + holding)):
        section = next((k for k in keys if k in holding), None)
        if section is not None:
            return place, section
    return NO_UNIT, ""


def locate_missing(facts: Sequence[str], response: Response, index: BookIndex
                   ) -> tuple[FactPlace, ...]:
    """Per fact in `facts` (those the answer lacks), where the book holds it; nothing when the
    index keeps no units (built before sentence vectors): the places cannot be told."""
    table = index.sentences
    if not facts or table is None:
        return ()
    units = _normalised_units(index)
    draft, retrieval = response.draft, response.retrieval
    own = list(draft.sources) if draft is not None else []  # an extractive draft's evidence
    hits = list(retrieval.hits) if retrieval is not None else []
    evidence = own or (gather_sources(hits, retrieval.candidates) if retrieval is not None else [])
    markers = set(draft.markers) if draft is not None else set()
    # S1, S2, ... name the draft's sources, or (a Claude answer) the retrieval's hits
    cited = _sections_of(h for i, h in enumerate(own or hits) if f"S{i + 1}" in markers)
    others = [k for k in _sections_of(evidence) if k not in cited]
    ranked = _sections_of(retrieval.candidates) if retrieval is not None else []
    titles = _titles(index)
    places = []
    for fact in facts:
        patterns = fact_patterns(fact)
        holding = list(dict.fromkeys(table.keys[row] for row, text in enumerate(units)
                                     if any(p.search(text) for p in patterns)))
        place, section = _place(holding, cited, others, ranked)
        places.append(FactPlace(fact, place, titles.get(section, section)))
    return tuple(places)


def place_counts(places: Iterable[FactPlace]) -> dict[str, int]:
    """How many missing facts sit in each place, every place named (0 when none)."""
    counted = Counter(p.place for p in places)
    return {name: counted.get(name, 0) for name in PLACES}


def describe_counts(counts: dict[str, int]) -> str:
    """"43 in a cited section, not quoted; 15 elsewhere in the evidence, ..." (place_counts)."""
    return "; ".join(f"{n} {PLACE_LABELS[place]}" for place, n in counts.items())
