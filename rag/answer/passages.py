"""Short sections read whole: a quote whose section is a short list or table stands for the whole
section, read once in the book's order, so the lines the unit model left out (the other half of a
two-part question is often the next line) are in the answer too. rag.answer.quotes chooses the
units; rag.answer.extractive quotes what whole_section() makes of them.
"""

from __future__ import annotations

import re

from rag.answer.evidence import EvidenceUnit
from rag.answer.quotes import MAX_WORDS, Scored, label_of, section_body
from rag.answer.tuned import MAX_PROSE, SHORT_SECTION_WORDS
from rag.book.lists import LABEL_WORDS
from rag.book.sentences import PROSE

PASSAGE = "passage"  # the kind of a short section quoted whole
SENTENCE_END = re.compile(r"[.!?:;]$")  # a unit that needs no "; " after it


def whole_section(chosen: list[Scored], scored: list[Scored],
                  limit: int | None = None) -> list[Scored]:
    """The quotes with each one's section read whole in its place, when that section is short
    (its quotable units but its title, `limit` words or fewer, a list or table with at most
    MAX_PROSE sentences of prose) and holds more than the units already quoted from it: one
    passage in the book's order, as likely as the unit it stands for; the lead's first, then
    those of quotes from other sections (each whole, or else as chosen) while the answer stays
    within MAX_WORDS. A short section is one point made in a few lines ("Disadvantages:
    Requires managing two environments; Needs physical lab space"), and the unit model, scoring
    each line against the question alone, often quotes one line of it and leaves out the one
    that answers the other half of the question. On the development sets
    (bench/labelled_sets.py, 434 in-scope questions) answers holding every key fact 250 -> 268
    for the lead's section alone, false answers unchanged (5 of 133), the sample book's
    unchanged (53 of 87), answers 41 -> 46 words on average (at 60 words 267, at 110, MAX_WORDS,
    272); with the other quotes' sections too, 274 -> 277 (and 284 once a quote from another
    section joined more readily: rag.answer.quotes.FAR_RELATIVE). A rule's quotes (a
    definition, the prerequisites, an entry) are left as chosen, which costs none. Units of a
    section quoted whole are not shown again under the answer as more from the book."""
    lead, limit = chosen[0], SHORT_SECTION_WORDS if limit is None else limit
    passage = _passage(lead, chosen, scored, limit)
    out = [passage or lead]
    read = {lead.unit.source} if passage else set()  # sections a passage already holds
    size = len(out[0].unit.text.split())
    for s in chosen[1:]:
        if s.unit.source in read:
            continue
        if s.unit.source == lead.unit.source:  # the lead's section, not short: as chosen
            out.append(s)
            size += len(s.unit.text.split())
            continue
        for option in (_passage(s, chosen, scored, limit), s):
            if option is not None and size + len(option.unit.text.split()) <= MAX_WORDS:
                out.append(option)
                size += len(option.unit.text.split())
                if option is not s:
                    read.add(s.unit.source)
                break
    return out


def _passage(unit: Scored, chosen: list[Scored], scored: list[Scored], limit: int
             ) -> Scored | None:
    """The section of `unit` as one passage of its units in `scored` (as likely as `unit`), when
    it is short and adds something to the `chosen` units; else None."""
    body = section_body(scored, unit.unit.source)
    if unit not in body or all(s in chosen for s in body) or \
            sum(s.unit.kind == PROSE for s in body) > MAX_PROSE:
        return None
    text = passage_text([s.unit.text for s in body])
    if len(text.split()) > limit:
        return None
    first = body[0].unit
    return Scored(EvidenceUnit(first.source, first.position, text, PASSAGE, first.block,
                               first.heading, unit.unit.asked),
                  unit.probability, frozenset().union(*(s.stems for s in body)))


def passage_text(texts: list[str]) -> str:
    """Units of one section read as one passage, in the book's order: without a unit that only
    lists the labels of the others ("Challenges: Real-world uncertainty; Safety requirements"
    before "Real-world uncertainty: Sensor noise, ...") nor a lead-in also quoted before its
    items, a label said once for the units in a row that carry it ("Solution: Only call
    rclpy.init() once; Remove any duplicate calls"), a unit that does not end a sentence closed
    by "; ", and no colon at the end (what it introduced, a program, is not quoted)."""
    labels = [label_of(t) for t in texts]
    kept = []
    for n, text in enumerate(texts):
        if any(k != n and other.startswith(text.rstrip(":") + ":")
               for k, other in enumerate(texts)):
            continue  # a lead-in quoted alone, and again before its items
        head, _, listed = text.rpartition(": ")
        pieces = [p.strip().lower() for p in listed.split("; ")]
        others = {label for k, label in enumerate(labels) if k != n and label}
        if not (len(pieces) > 1 and all(p in others for p in pieces)):
            kept.append((labels[n], text))
        elif len(head.split()) > LABEL_WORDS:  # a lead-in says more than a label
            kept.append(("", head + ":"))
    merged: list[list[str]] = []  # [label, text]
    for n, (label, text) in enumerate(kept):
        if label and n and kept[n - 1][0] == label:
            merged[-1][1] += "; " + text.split(": ", 1)[1]
        else:
            merged.append([label or "", text])
    parts = [text for _, text in merged]
    return " ".join(t if SENTENCE_END.search(t) or n == len(parts) - 1 else t + ";"
                    for n, t in enumerate(parts)).removesuffix(":")  # its code is not quoted
