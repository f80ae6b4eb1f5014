"""Units read around an answer's quotes: the neighbours of the lead's quotes in its section, in
the book's order, while the answer has words to spare (rag.answer.extractive, where no rule
chose the quotes).

Short answers lost to the passage baseline on books the rules were not made on: one to three of
the likeliest units, often from different places, left out the sentence next to the one that
names the topic, where books put the fact asked for (FastAPI: "Here it becomes important to
declare gt and not just ge." before the quoted "... you can require a value greater than 0").
The quotes stay as chosen (each short section read whole, rag.answer.passages); the likeliest
unit next to a quote of the lead's section joins while the answer stays within MAX_WORDS, one
before a quote counted BEFORE_SHARE of its probability (a book states a point, then explains
it). bench/quality.py, development sets, before -> after (passage baseline): sample book
53 -> 57 of 87 (39), Physical AI 241 -> 252 of 357 (212), FastAPI 12 -> 16 of 30 (17), d2l
13 -> 14 of 30 (11), Content Guide 19 -> 24 of 30 (16); out-of-scope answers unchanged on every
book. A window grown from the lead alone in place of the quotes (branch answerer's design) lost
the quotes from further away: Physical AI 241 -> 233, the sample book 53 -> 51.
"""

from __future__ import annotations

from collections.abc import Sequence

from rag.answer.quotes import Scored, section_body
from rag.answer.tuned import BEFORE_SHARE


def fill_around(scored: Sequence[Scored], quoted: Sequence[Scored], budget: int) -> list[Scored]:
    """`quoted` (lead first) with the units next to the lead's section's quotes added while they
    fit `budget` words, the likeliest neighbour first (one before a quote counted BEFORE_SHARE):
    the lead's section in the book's order, then the quotes from other sections as they were."""
    lead = quoted[0]
    section = section_body(scored, lead.unit.source)
    mine = [s for s in quoted if s.unit.source == lead.unit.source]
    rest = [s for s in quoted if s.unit.source != lead.unit.source]
    taken = {id(s) for s in mine}
    size = sum(len(s.unit.text.split()) for s in quoted)
    while True:
        at = [n for n, s in enumerate(section) if id(s) in taken]
        options = [(section[n].probability * (BEFORE_SHARE if d < 0 else 1.0), n)
                   for i in at for d, n in ((-1, i - 1), (1, i + 1))
                   if 0 <= n < len(section) and id(section[n]) not in taken
                   and size + len(section[n].unit.text.split()) <= budget]
        if not options:
            break
        _, n = max(options)
        taken.add(id(section[n]))
        size += len(section[n].unit.text.split())
    outside = [s for s in mine if s not in section]  # a quote that is not a plain unit of it
    return [*outside, *(s for s in section if id(s) in taken), *rest]
