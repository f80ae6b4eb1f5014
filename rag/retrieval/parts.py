"""Numbered parts of a book: "What does Module 2 cover?", "What will I learn in week 5?".

MiniLM and BM25 tell "Module 2" from "Module 1" poorly: the number is one short token among
the question's words, so a section of Module 1 that matches "module ... cover" ranked above
Module 2's introduction (30th). When a question names a numbered part (a module, week, chapter,
lesson, part or unit with its number), each candidate is placed by where it sits in the book: its
module and chapter folders ("module-2-gazebo-unity", "week-1-2-sensors-overview"), its chapter's
title and its heading path ("Weeks 6-7: Robot Simulation …"). A candidate that sits in the part
named scores +1, one that sits in another part of the same kind -1, any other 0 (a question that
names two parts: the mean). Where a candidate is mentioned does not place it: "This kit covers
Module 3" is a hardware section, not a part of Module 3.

The score moves the blended score by PART_WEIGHT (rag.retrieval.hybrid.rank_candidates), and the
inspector shows it beside the other components. A question that names no numbered part is
ranked exactly as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from rag.types import Chunk

KINDS = ("module", "week", "chapter", "lesson", "part", "unit")
# "Module 2", "week 5", "Weeks 6-7", "chapter three", "module-2-gazebo-unity", "week-1-2-…":
# a kind, then a number, or a range of two; a folder's slug writes the range with a hyphen.
_NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen "
                 "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
NUMBERS = {word: n for n, word in enumerate(_NUMBER_WORDS, start=1)}
_NUMBER = r"(\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")\b"
PART_RE = re.compile(r"\b(" + "|".join(KINDS) + r")s?[\s_-]*" + _NUMBER +
                     r"(?:\s*(?:-|–|—|to|and|&)\s*(\d{1,3})\b(?![.,]\d))?", re.I)
# How far a candidate's blended score moves per unit of part score. The intended part's
# introduction ranked 30th at 0.296 for "What does Module 2 cover?" under sections of Module 1
# at 0.45. On data/eval/physical-ai-parts.yaml (16 in scope, 4 out) 0.15 answers 11 right with
# 1 false answer; 0.10 and 0.20 answer 10 right (0.20 also one fewer of the other development
# sets), 0.25 10 with 2 false answers (2026-11-25; 3 right and 2 false without the score).
PART_WEIGHT = 0.15
MENTION = 0.5  # a part named in a chunk's text counts half as much as where the chunk sits
MAX_RANGE = 20  # "weeks 1-13" spans 13; a wider "range" is two numbers, not a span
POOL_EXTRA = 20  # chunks whose text names the part asked about, added to the candidate pool


def _number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBERS[text.lower()]


Parts = dict[str, frozenset[int]]  # kind -> numbers: {"week": {6, 7}, "module": {2}}


def parts_in(text: str) -> dict[str, frozenset[int]]:
    """Every numbered part a text names, by kind: "Weeks 6-7 (Module 2)" ->
    {"week": {6, 7}, "module": {2}}."""
    found: dict[str, set[int]] = {}
    for m in PART_RE.finditer(text):
        first = _number(m.group(2))
        last = int(m.group(3)) if m.group(3) else first
        numbers = range(first, last + 1) if first < last <= first + MAX_RANGE else {first, last}
        found.setdefault(m.group(1).lower(), set()).update(numbers)
    return {kind: frozenset(numbers) for kind, numbers in found.items()}


def named_parts(question: str) -> dict[str, frozenset[int]]:
    """The numbered parts a question names ({} for most questions)."""
    return parts_in(question)


def part_words(question: str) -> str:
    """The words of the question that name its parts ("module 3", "weeks 11 and 12")."""
    return " ".join(m.group(0) for m in PART_RE.finditer(question))


def place_of(chunk: Chunk) -> dict[str, frozenset[int]]:
    """Where a chunk sits: the parts its folders, chapter title and heading path name."""
    return parts_in(" ; ".join((chunk.module_id, chunk.chapter_id, chunk.chapter_title,
                                *chunk.heading_path)))


def part_score(asked: dict[str, frozenset[int]], place: dict[str, frozenset[int]],
               mentioned: dict[str, frozenset[int]] | None = None) -> float:
    """+1 in the part asked about, -1 in another part of the same kind; where the chunk's place
    does not say, MENTION x the same vote by the parts its text names (a syllabus row "Week 7:
    Advanced Simulation; Lesson 1: ..."), else 0. The mean over the kinds the question names."""
    if not asked:
        return 0.0
    votes = []
    for kind, numbers in asked.items():
        if kind in place:
            votes.append(1.0 if numbers & place[kind] else -1.0)
        elif mentioned and kind in mentioned:
            votes.append(MENTION if numbers & mentioned[kind] else -MENTION)
        else:
            votes.append(0.0)
    return sum(votes) / len(votes)


def part_scores(question: str, chunks: Sequence[Chunk],
                parts: Sequence[tuple[Parts, Parts]] | None = None) -> np.ndarray:
    """Each chunk's part score for the question (all 0 when it names no numbered part);
    `parts`: each chunk's (place, mentions) when already known (book_parts)."""
    asked = named_parts(question)
    if not asked:
        return np.zeros(len(chunks), dtype=np.float32)
    if parts is None:
        parts = [(place_of(c), parts_in(c.text)) for c in chunks]
    return np.array([part_score(asked, place, mentioned) for place, mentioned in parts],
                    dtype=np.float32)


def book_parts(index) -> list[tuple[Parts, Parts]]:
    """Each chunk of a loaded BookIndex's book: (where it sits, the parts its text names), read
    once per index (BookIndex.derived) when a question first names a part, not per question."""
    key = ("book_parts", id(index.chunks))
    if key not in index.derived:
        index.derived[key] = [(place_of(c), parts_in(c.text)) for c in index.chunks]
    return index.derived[key]


def pool_part_scores(index, question: str, positions: Sequence[int]) -> np.ndarray:
    """part_scores of the chunks at `positions` of index.chunks, from book_parts."""
    if not named_parts(question):
        return np.zeros(len(positions), dtype=np.float32)
    parts = book_parts(index)
    return part_scores(question, [index.chunks[p] for p in positions],
                       [parts[p] for p in positions])


def names_part(text: str, asked: dict[str, frozenset[int]]) -> bool:
    """The text names a part the question asks about ("Module 3 (Weeks 8-10): Using NVIDIA Isaac
    perception stack" for "module 3")."""
    named = parts_in(text)
    return any(numbers & named.get(kind, frozenset()) for kind, numbers in asked.items())


def names_other_part(text: str, asked: dict[str, frozenset[int]]) -> bool:
    """The text names a part of a kind the question asks about, but never the one asked:
    "This kit covers Module 3 (Isaac ROS) and Module 4 (VLA)." for "What does Module 2 cover?"."""
    named = parts_in(text)
    return any(kind in named and not numbers & named[kind] for kind, numbers in asked.items())


# A question about what a part holds as a whole: its topics, lessons or deliverables.
OVERVIEW_Q = re.compile(r"\b(?:cover(?:s|ed)?|learn|taught|teach(?:es)?|about|lessons?|topics?|"
                        r"deliverables?|hand(?:ed)? in|turn(?:ed)? in|submit|due|focus|happens?|"
                        r"happening|(?:do|will) (?:we|i) do|overview|schedule|contents?)\b", re.I)
# ... unless it asks of one thing in the part (its project, what it needs first).
SPECIFIC_Q = re.compile(r"\b(?:project|assessment|prerequisites?|before|need|requires?|"
                        r"graphics|gpu|hardware|install)\b", re.I)


def asks_overview(question: str) -> dict[str, frozenset[int]]:
    """The parts a question asks about as a whole ("What will I learn in week 9?", "What do we
    hand in at the end of week 6?"); {} for any other question."""
    asked = named_parts(question)
    if not asked or not OVERVIEW_Q.search(question) or SPECIFIC_Q.search(question):
        return {}
    return asked


def is_entry(text: str, asked: dict[str, frozenset[int]]) -> bool:
    """The text is the book's entry for a part asked about: it opens with the part's name,
    "Week 6: Gazebo Fundamentals; Lesson 1: ...", "Module 3: Isaac: Weeks 8-10; ...", "Weeks
    11-12: Humanoid Robot Development" (not "Completed Week 6 Lesson 1 on Gazebo setup")."""
    lead = re.split(r"[:;|(]", text, maxsplit=1)[0]
    first = re.match(r"^\W*(" + "|".join(KINDS) + r")s?\b", lead, re.I)
    named = parts_in(lead)
    return bool(first) and any(numbers & named.get(kind, frozenset())
                               for kind, numbers in asked.items()
                               if kind == first.group(1).lower())


def mentioned_in(index, question: str, limit: int = POOL_EXTRA) -> list[int]:
    """Positions (in index.chunks) of up to `limit` chunks whose text names a numbered part the
    question names, in book order: candidates beside the dense and BM25 ones, whatever their
    scores ("Week 5: Robot Description & Launch; ..." in Module 1's weekly breakdown was in
    neither top 50 for "What will I learn in week 5?"). A table of them is built once per
    loaded index (BookIndex.derived)."""
    asked = named_parts(question)
    if not asked:
        return []
    key = ("part_mentions", id(index.chunks))
    if key not in index.derived:
        table: dict[tuple[str, int], list[int]] = {}
        for position, (_, mentioned) in enumerate(book_parts(index)):
            for kind, numbers in mentioned.items():
                for n in numbers:
                    table.setdefault((kind, n), []).append(position)
        index.derived[key] = table
    table = index.derived[key]
    found = sorted({p for kind, numbers in asked.items() for n in numbers
                    for p in table.get((kind, n), ())})
    return found[:limit]
