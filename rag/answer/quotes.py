"""Which units of the evidence an offline answer quotes, and in what order they read.

The best unit leads (or one a rule wants: the likeliest that states the asked quantity or defines
the asked subject, led_by; for a question comparing two things, the book's definition of each,
defined_pair); up to two more that also score well follow, from near it in its section or, when
nothing there comes close, from another section, preferring those that cover what the others leave
out of the question (choose). For a question that names a numbered part of the book,
the units about that part are the candidates (in_named_part); for one that asks what is needed
first, the chapter's prerequisites lead (prerequisites). The probabilities come from
rag.answer.unit_scoring; rag.answer.extractive drafts the answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag.answer.evidence import EvidenceUnit, gives_definition
from rag.answer.tuned import (
    COVERAGE,
    EXTRA_RELATIVE,
    FAR_DISCOUNT,
    FAR_RELATIVE,
    MAX_WORDS,
    NEAR,
    SUPPORT_FLOOR,
)
from rag.book.lists import OWN_LABEL_RE
from rag.book.sentences import HEADING
from rag.index.lexical import tokenize
from rag.retrieval.parts import named_parts, names_other_part, names_part, part_score, place_of
from rag.types import Hit


@dataclass(frozen=True)
class Scored:
    unit: EvidenceUnit
    probability: float  # that this unit holds the answer (rag.answer.unit_scoring)
    stems: frozenset[str]  # the unit's terms, as the question's are compared with them


def section_body(scored: Sequence[Scored], source: int) -> list[Scored]:
    """One section's units in the book's order, its title (the heading that opens
    it) aside: what a short section read whole and the units read around a quote are made of."""
    return sorted((s for s in scored if s.unit.source == source
                   and not (s.unit.kind == HEADING and s.unit.position == 0)),
                  key=lambda s: s.unit.position)


def section_terms(scored: list[Scored]) -> dict[int, set[str]]:
    """Per source, the stems of its units and of their headings."""
    terms: dict[int, set[str]] = {}
    for s in scored:
        if s.unit.source not in terms:
            terms[s.unit.source] = set(tokenize(" ".join(s.unit.heading)))
        terms[s.unit.source].update(s.stems)
    return terms


def label_of(text: str) -> str | None:
    """The label a unit opens with ("GPU: NVIDIA RTX ..." -> "gpu"), or None."""
    return m.group(1).strip().lower() if (m := OWN_LABEL_RE.match(text)) else None


def likeliest(scored: list[Scored]) -> Scored:
    """The most probable unit; of equals, the first in retrieval's order and the book's."""
    return max(scored, key=lambda s: (s.probability, -s.unit.source, -s.unit.position))


def choose(scored: list[Scored], max_units: int, question: str, lead: Scored | None = None
           ) -> list[Scored]:
    """The best unit (or `lead`), then up to max_units - 1 more that are close to it (in its
    section, or likely enough elsewhere, where nothing near it comes close), preferring those
    that cover what the others leave out of the question; best first, the rest in book order."""
    terms = set(tokenize(question))
    best = lead or likeliest(scored)
    chosen, covered, size = [best], best.stems & terms, len(best.unit.text.split())
    while len(chosen) < max_units:
        options = []
        for s in scored:
            near = s.unit.source == best.unit.source and \
                abs(s.unit.position - best.unit.position) <= NEAR
            share = EXTRA_RELATIVE if near else FAR_RELATIVE
            if s in chosen or s.probability < best.probability * share or \
                    size + len(s.unit.text.split()) > MAX_WORDS:
                continue
            gain = len((s.stems & terms) - covered) / max(len(terms), 1)
            options.append((s.probability * (1 + COVERAGE * gain) * (1 if near else FAR_DISCOUNT),
                            -s.unit.source, -s.unit.position, s))
        if not options:
            break
        pick = max(options, key=lambda o: o[:3])[3]
        chosen.append(pick)
        covered |= pick.stems & terms
        size += len(pick.unit.text.split())
    return [chosen[0], *sorted(chosen[1:], key=lambda s: (s.unit.source, s.unit.position))]


def led_by(scored: list[Scored], count: int, question: str,
           wanted: Callable[[EvidenceUnit], bool]) -> list[Scored] | None:
    """choose()'s quotes led by the likeliest unit that reaches the support floor and
    is `wanted` (states the asked quantity, defines the asked subject); None without one."""
    stating = [s for s in scored if s.probability >= SUPPORT_FLOOR and wanted(s.unit)]
    return choose(scored, count, question, likeliest(stating)) if stating else None


def defined_pair(scored: list[Scored], compared: tuple[str, ...], question: str
                 ) -> list[Scored] | None:
    """For a question comparing two things, the likeliest unit that defines each,
    in the question's order ("Forward Kinematics: Calculating ... given joint angles",
    "Inverse Kinematics: Calculating joint angles needed ..."); None unless the book's
    evidence defines both, within MAX_WORDS. The book defining both is the answer's support:
    each definition alone may score low against a question that names two things."""
    pair: list[Scored] = []
    for subject in compared:
        defining = [s for s in scored if s not in pair and
                    gives_definition(s.unit.text, s.unit.kind, subject)]
        if not defining:
            return None
        pair.append(likeliest(defining))
    fits = sum(len(s.unit.text.split()) for s in pair) <= MAX_WORDS
    return pair if len(pair) == 2 and fits else None


# "What should I be comfortable with before I start the lesson on URDF?" asks for what the book
# lists as its prerequisites, not for what the lesson teaches ("By the end of this lesson, you
# will be able to: ...", the learning objectives beside them).
PREREQUISITE_Q = re.compile(r"\bprerequisites?\b|\bbefore (?:i|we|you) (?:start|begin|take|dive|"
                            r"tackle)|\bbefore (?:starting|beginning|taking)\b|\b(?:comfortable|"
                            r"familiar) with\b|\bexpected to (?:know|have)\b|\bbackground\b|"
                            r"\bprior (?:knowledge|experience)\b|\bneed to know\b", re.I)
PREREQUISITE_RE = re.compile(r"\bprerequisites?\b", re.I)


def states_prerequisite(unit: EvidenceUnit) -> bool:
    """The unit is one of the book's prerequisites: under a "Prerequisites" heading (or one of
    its subheadings, "Required", "Recommended") or labelled so ("**Prerequisites**: ...")."""
    return any(PREREQUISITE_RE.search(h) for h in unit.heading) or \
        bool(PREREQUISITE_RE.match(unit.text.lstrip("-* ")))


def prerequisites(scored: list[Scored], sources: Sequence[Hit], lead: Scored, max_units: int,
                  question: str) -> list[Scored]:
    """For a question that asks what is needed first (PREREQUISITE_Q), the book's prerequisites
    in the chapter of the answer's lead (`sources`: the evidence's sections, which the units'
    source numbers index), as choose() quotes them, likeliest first; [] for any other question,
    when the lead is one, or when that chapter lists none. However low they score: the question
    asks for them, and retrieval ranked the "Prerequisites" section of the URDF lesson 8th,
    under its learning objectives."""
    if not PREREQUISITE_Q.search(question) or states_prerequisite(lead.unit):
        return []
    chapter = sources[lead.unit.source].chunk.chapter_id
    listed = [s for s in scored if states_prerequisite(s.unit) and
              sources[s.unit.source].chunk.chapter_id == chapter]
    return choose(listed, max_units, question, likeliest(listed)) if listed else []


def placements(sources: Sequence[Hit], question: str) -> list[float]:
    """Per source, whether it sits in the numbered part the question names (> 0), in another
    of its kind (< 0) or neither (0): where it is placed, not what its text mentions
    (rag.retrieval.parts.part_score without mentions). All 0 for any other question."""
    asked = named_parts(question)
    return [part_score(asked, place_of(h.chunk)) if asked else 0.0 for h in sources]


def in_named_part(scored: list[Scored], placed: Sequence[float], question: str
                  ) -> list[Scored]:
    """For a question that names a numbered part ("What does Module 2 cover?"), the units about
    it (rag.retrieval.parts): naming it ("Module 2 (Weeks 6-7): Simulating sensors in
    Gazebo"), or in a section placed in it (`placed`: placements()) and naming no other part
    of its kind (weeks 1-2's "Hands-On in Later Modules" lists weeks 6-13); without any, the
    units not about another part of its kind: neither placed in one nor, placed nowhere, naming
    only others ("This kit covers Module 3 (Isaac ROS) and Module 4 (VLA)."; Module 4's
    prerequisite "Completion of Module 3" stays). All units for any other question, or when
    every unit is about another part."""
    asked = named_parts(question)
    if not asked:
        return scored
    inside = [s for s in scored if placed[s.unit.source] > 0 or (
        placed[s.unit.source] == 0 and not names_other_part(s.unit.text, asked))]
    about = [s for s in inside if names_part(s.unit.text, asked) or (
        placed[s.unit.source] > 0 and not names_other_part(s.unit.text, asked))]
    return about or inside or scored
