"""The evidence an extractive answer may quote: which sections (sources), and their units.

Sources are the selected hits, then sections that passed the threshold but fell outside top-k
(the section that answers is often ranked 6th or 7th), and for "What is X?" (or "How is X
different from Y?") a candidate section that defines X when no source does (a glossary's
entry ranks low: with_definitions); each source is one section, cited by its best chunk.
Units come from the index's sentence table when it has the section, else from the chunk's own
text (a pasted selection, or an index built before sentence vectors were kept). A unit that
answers one of the book's review questions, or sits under a heading that asks one
(rag.book.quiz), comes with that question's vector too.
"""

from __future__ import annotations

import itertools
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from rag.answer.shape import compared_subjects, defines, question_subject
from rag.answer.tuned import MAX_DEFINING, MAX_SOURCES
from rag.book.quiz import Quiz, heading_ask
from rag.book.sentences import COMMAND, HEADING, split_section
from rag.index.lexical import tokenize
from rag.index.sentences import SentenceTable
from rag.providers.base import Embedder
from rag.retrieval.parts import is_entry
from rag.types import Hit


@dataclass(frozen=True)
class EvidenceUnit:
    source: int  # index into the sources (marker S{source + 1})
    position: int  # order within its section
    text: str
    kind: str
    block: int
    heading: tuple[str, ...]
    asked: str = ""  # the book's own question this unit answers (rag.book.quiz), or ""


def gather_sources(hits: Sequence[Hit], candidates: Sequence[Hit] = (),
                   limit: int = MAX_SOURCES) -> list[Hit]:
    """Selected hits first, then the best chunk of each other passing section, best first."""
    sources: list[Hit] = []
    seen: set[str] = set()
    for hit in [*hits, *(c for c in candidates if c.passed)]:
        key = hit.chunk.section_key if hit.chunk.source == "book" else hit.chunk.chunk_id
        if key not in seen and len(sources) < limit:
            seen.add(key)
            sources.append(hit)
    return sources


def gives_definition(text: str, kind: str, subject: str) -> bool:
    """The unit gives the book's definition of `subject` (rag.answer.shape.defines): not a
    command that names it ("git clone .../isaac_ros_common") nor a heading that only names it
    or spells it out ("1. LIDAR (Light Detection and Ranging)")."""
    return kind not in (COMMAND, HEADING) and defines(text, subject)


def with_definitions(sources: list[Hit], candidates: Sequence[Hit], subjects: Sequence[str],
                     table: SentenceTable | None, limit: int = MAX_DEFINING) -> list[Hit]:
    """`sources` and, after them, up to `limit` more for each of the `subjects` no source
    defines: the best chunk of each candidate section that holds a unit defining it
    (rag.answer.shape.defines: "Isaac ROS: NVIDIA's hardware-accelerated ROS 2 packages ...").
    A glossary's section lists dozens of terms, so its chunks rank low for any one of them:
    "What is Isaac ROS?" found its entry 35th of 82 and quoted the commands that clone Isaac
    ROS instead. Subjects are what "What is X?" asks, or the two things a question compares."""
    if table is None or not table.texts:
        return sources
    have = {h.chunk.section_key for h in sources if h.chunk.source == "book"}
    extra: list[Hit] = []
    for subject in filter(None, subjects):
        terms = frozenset(tokenize(subject))  # a unit without them cannot define it
        defining = {table.keys[r] for r, stems in enumerate(table.token_sets)
                    if terms <= stems and gives_definition(table.texts[r], table.kinds[r],
                                                           subject)}
        if have & defining:
            continue
        added = 0
        for hit in candidates:
            section = hit.chunk.section_key
            if added < limit and hit.chunk.source == "book" and section in defining and \
                    section not in have:
                have.add(section)
                extra.append(hit)
                added += 1
    return [*sources, *extra]


def with_entries(sources: list[Hit], candidates: Sequence[Hit],
                 asked: dict[str, frozenset[int]], table: SentenceTable | None,
                 limit: int = 2) -> list[Hit]:
    """`sources` and, after them, up to `limit` candidate sections holding the book's entry for
    a numbered part a question asks about as a whole (rag.retrieval.parts.is_entry: "Week 6:
    Gazebo Fundamentals; ..." in Module 2's weekly breakdown), when no source holds one: "What
    do we hand in at the end of week 6?" brought only week 6's lessons, which say no
    deliverable."""
    if not asked or table is None or not table.texts:
        return sources

    def holds_entry(section: str) -> bool:  # a row or item, not a lesson's title
        return any(table.kinds[r] != HEADING and is_entry(table.texts[r], asked)
                   for r in table.rows_for(section))

    have = {h.chunk.section_key for h in sources if h.chunk.source == "book"}
    if any(holds_entry(section) for section in have):
        return sources
    extra: list[Hit] = []
    for hit in candidates:  # only the candidates' sections are read, not the whole book
        section = hit.chunk.section_key
        if len(extra) < limit and hit.chunk.source == "book" and section not in have:
            have.add(section)
            if holds_entry(section):
                extra.append(hit)
    return [*sources, *extra]


def defines_asked(question: str, candidates: Sequence[Hit], table: SentenceTable | None) -> bool:
    """Whether a candidate section defines what "What is X?" / "What does X stand for?" asks
    about, or each of two things the question compares (with_definitions would fetch it)."""
    subjects = compared_subjects(question) or (question_subject(question),)
    return all(subjects) and all(with_definitions([], candidates, (subject,), table, 1)
                                 for subject in subjects)


def source_units(sources: Sequence[Hit], table: SentenceTable | None,
                 embed: Callable[[list[str]], np.ndarray] | None
                 ) -> tuple[list[EvidenceUnit], np.ndarray, np.ndarray]:
    """Every unit of every source with a vector each, and the vector of the review question
    it answers (zeros where there is none, or no vector can be had)."""
    units: list[EvidenceUnit] = []
    rows: list[np.ndarray | None] = []
    known = table.ask_vectors if table is not None else {}
    fresh_asks: dict[str, np.ndarray] = {}  # questions of units from outside the table
    seen: set[str] = set()
    for i, hit in enumerate(sources):
        c = hit.chunk
        found = table.rows_for(c.section_key) if table is not None and c.source == "book" else []
        if found:
            items = [(table.texts[r], table.kinds[r], table.blocks[r], table.vectors[r],
                      table.asks[r]) for r in found]
        else:
            quiz, heading = Quiz(c.text), heading_ask(c.section_title)
            items = [(u.text, u.kind, u.block, None, quiz.asked_by(u.text) or heading)
                     for u in split_section(c.text, c.section_title)]
        for position, (text, kind, block, vector, asked) in enumerate(items):
            if text.lower() in seen:
                continue
            seen.add(text.lower())
            units.append(EvidenceUnit(i, position, text, kind, block, c.heading_path, asked))
            rows.append(vector)
    missing = [n for n, v in enumerate(rows) if v is None]
    asks = list(dict.fromkeys(u.asked for u in units if u.asked and u.asked not in known))
    dim = next((len(v) for v in itertools.chain(rows, known.values()) if v is not None), 0)
    if (missing or asks) and embed is not None:
        fresh = embed([units[n].text for n in missing] + asks)
        for n, vector in zip(missing, fresh[:len(missing)], strict=True):
            rows[n] = vector
        fresh_asks.update(zip(asks, fresh[len(missing):], strict=True))
        dim = fresh.shape[1]
    if not units:
        return [], np.zeros((0, dim), dtype=np.float32), np.zeros((0, dim), dtype=np.float32)
    zero = np.zeros(dim, np.float32)
    return (units, np.vstack([v if v is not None else zero for v in rows]),
            np.vstack([known.get(u.asked, fresh_asks.get(u.asked, zero)) if u.asked else zero
                       for u in units]))


class SentenceVectors:
    """Vectors of units that the sentence table lacks, each embedded once per embedder and on
    its own, so a vector never depends on the batch it came with and answers stay identical
    whichever question embedded a unit first."""

    def __init__(self, embedder: Embedder, size: int = 8192) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, sentences: list[str]) -> np.ndarray:
        with self._lock:
            found = {s: self._vectors[s] for s in sentences if s in self._vectors}
        for sentence in dict.fromkeys(s for s in sentences if s not in found):
            found[sentence] = self.embedder.embed_documents([sentence])[0]
        with self._lock:
            for sentence, vector in found.items():
                self._vectors[sentence] = vector
                self._vectors.move_to_end(sentence)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        if not sentences:
            return np.zeros((0, self.embedder.dim), dtype=np.float32)
        return np.vstack([found[s] for s in sentences])


_SHARED: weakref.WeakKeyDictionary[Embedder, SentenceVectors] = weakref.WeakKeyDictionary()
_SHARED_LOCK = threading.Lock()


def sentence_vectors_for(embedder: Embedder) -> SentenceVectors:
    """One cache per embedder object, shared by every pipeline built on it."""
    with _SHARED_LOCK:
        if embedder not in _SHARED:
            _SHARED[embedder] = SentenceVectors(embedder)
        return _SHARED[embedder]
