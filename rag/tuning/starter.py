"""A starter question set for a book nobody has labelled yet, made from the book itself.

Every quotable unit of every section (rag.book.sentences: the units the answerer quotes, but list
items as written, without the label the answerer's units carry) is offered to the templates of
starter_rules (offline) or, with Claude configured, to Claude (starter_claude); each question comes
back with the section it came from as its expected section and one key fact taken verbatim from its
sentence. Every candidate, whoever phrased it, passes the same checks (question_problem). The set is
then picked deterministically: chapters in book order take turns, so a 40-question set spreads over
the whole book; a question or key fact seen before is not asked again (an acronym spelt out in
several sections becomes one question that expects any of them). Out-of-scope probes follow:
real-time and code requests the capability guardrail refuses, and off-topic questions whose words
the book does not use.

The result records how it was made (`generated: offline|claude`, the date, the book), for the
YAML header a saved set keeps.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from rag.book.parse import Book, parse_book
from rag.book.sentences import split_section
from rag.errors import InputError, ProviderError
from rag.tuning.key_facts import key_facts_found
from rag.tuning.questions import MAX_QUESTION_CHARS, Question
from rag.tuning.starter_headings import HOW_TO, heading_question, read_usage
from rag.tuning.starter_probes import book_topic, probes
from rag.tuning.starter_rules import Phrased, phrase_offline
from rag.tuning.starter_words import STOP_WORDS

OFFLINE, CLAUDE = "offline", "claude"
DEFAULT_QUESTIONS, MAX_STARTER_QUESTIONS = 40, 200
MAX_EXPECTED = 3  # sections one repeated question may expect
MAX_FACT_WORDS, MAX_FACT_CHARS = 6, 60
MIN_GENUS_USES = 3
# a question pointing at a place in the book cannot be asked on an empty chat ("the traits
# listed here", "the first spaces variable", "this function")
POINTING_RE = re.compile(r"(?i)\b(?:this|these|those|here|above|below|following|listed|"
                         r"aforementioned|previous|latter|former)\b|\bthe (?:first|second|"
                         r"third|last|next|other|same) \w")
MARKUP_RE = re.compile(r"[*_`\[\]|#<>{}\\]")


@dataclass(frozen=True)
class Sentence:
    """A quotable unit with where it stands in the book."""

    text: str
    kind: str  # prose | item | row | command | heading (rag.book.sentences)
    section: str  # chapter_id#section_id
    chapter: str  # module/chapter, the unit chapters take turns by
    title: str  # the section's title
    headings: str = ""  # the section's heading path with the chapter title


@dataclass(frozen=True)
class Candidate:
    question: str
    key_fact: str
    category: str
    sections: tuple[str, ...]
    source: str  # the sentence the question was made from
    chapter: str
    rank: int = 2  # chapters offer their most reliable questions first (starter_rules.Phrased)


@dataclass
class StarterSet:
    questions: list[Question]
    sources: list[str]  # per question: the sentence it came from ("" for a probe)
    generated: str  # offline | claude
    book: str
    date: str
    notices: list[str] = field(default_factory=list)

    def header(self) -> dict[str, Any]:
        """Provenance for the saved YAML."""
        return {"generated": self.generated, "date": self.date, "book": self.book}


Phraser = Callable[[list[Sentence]], list[Candidate]]


def book_sentences(book: Book) -> list[Sentence]:
    out = []
    for s in book.sections:
        ref, chapter = f"{s.chapter_id}#{s.section_id}", f"{s.module_id}/{s.chapter_id}"
        headings = " ".join((s.chapter_title, *s.heading_path))
        out += [Sentence(u.text, u.kind, ref, chapter, s.title, headings)
                for u in split_section(s.text, s.title, labelled=False)
                if u.kind != "command"]
    return out


def proper_names(sentences: Sequence[Sentence]) -> set[str]:
    """Words the book capitalises inside sentences at least as often as it writes them in lower
    case ("Gazebo", "Flask" beside an odd `flask`): these stay capitalised in a question; any
    other word starting a sentence is a common word ("Proprioception" -> "proprioception")."""
    usage = read_usage([s.text for s in sentences])
    return {w for s in sentences for w in re.findall(r"\b[A-Z][a-z][\w-]*", s.text)
            if w.lower() in usage.names}


def structure_candidates(book: Book, sentences: Sequence[Sentence]) -> list[Candidate]:
    """The questions a section's heading asks (starter_headings), one per section at most."""
    usage = read_usage([s.text for s in sentences])
    units: dict[str, list[Sentence]] = defaultdict(list)
    for s in sentences:
        units[s.section].append(s)
    out = []
    for sec in book.sections:
        ref = f"{sec.chapter_id}#{sec.section_id}"
        found = heading_question(sec.title, sec.text, [(u.text, u.kind) for u in units[ref]],
                                 usage)
        if found:
            out.append(Candidate(found.question, found.key_fact, HOW_TO, (ref,), found.source,
                                 f"{sec.module_id}/{sec.chapter_id}", 1))
    return out


def question_problem(question: str, key_fact: str, source: str) -> str:
    """Why a generated question is not fit to ask ("" when it is)."""
    words = question.split()
    if not 3 <= len(words) <= 30 or len(question) > min(MAX_QUESTION_CHARS, 240):
        return "the question is too short or too long"
    if not question.endswith("?") or not question[0].isupper() or MARKUP_RE.search(question):
        return "the question is not a plain sentence ending in '?'"
    if question.count("(") != question.count(")") or question.count('"') % 2:
        return "the question has unbalanced brackets or quotes"
    if POINTING_RE.search(question):
        return "the question points at a place in the book"
    fact_words = re.findall(r"[\w.,–-]+", key_fact)
    if not fact_words or len(key_fact) > MAX_FACT_CHARS or len(fact_words) > MAX_FACT_WORDS:
        return "the key fact is empty or not a short phrase"
    if all(w.lower().strip(".,") in STOP_WORDS or len(w) < 2 for w in fact_words):
        return "the key fact is only stop words"
    if not key_facts_found(source, [key_fact])[0]:
        return "the key fact is not in the sentence"
    if key_facts_found(question, [key_fact])[0]:
        return "the question gives its own answer away"
    return ""


def offline_phraser(sentences: Sequence[Sentence]) -> list[Candidate]:
    """The templates of starter_rules on each unit; a definition whose class word the book
    uses less than MIN_GENUS_USES times is a figure of speech ("Regression is the hammer")."""
    names = proper_names(sentences)
    words = Counter(w for s in sentences for w in re.findall(r"[a-z]{2,}", s.text.lower()))
    out = []
    for s in sentences:
        found = phrase_offline(s.text, s.kind, s.title, names, s.headings)
        if found is not None and (not found.genus or words[found.genus] >= MIN_GENUS_USES):
            out.append(candidate(found, s))
    return out


def candidate(phrased: Phrased, s: Sentence) -> Candidate:
    return Candidate(phrased.question, phrased.key_fact, phrased.category, (s.section,), s.text,
                     s.chapter, phrased.rank)


def _key(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


def merge_repeats(candidates: Sequence[Candidate]) -> list[Candidate]:
    """One candidate per question (in first-seen order), expecting every section it came from;
    a key fact already asked about elsewhere is not asked again."""
    merged: dict[str, Candidate] = {}
    facts: set[tuple[str, str]] = set()
    for c in candidates:
        key = _key(c.question)
        if key in merged:
            first = merged[key]
            if _key(first.key_fact) == _key(c.key_fact) and len(first.sections) < MAX_EXPECTED:
                merged[key] = replace(first, sections=tuple(dict.fromkeys(first.sections
                                                                          + c.sections)))
            continue
        if (_key(c.key_fact), c.category) in facts:
            continue
        facts.add((_key(c.key_fact), c.category))
        merged[key] = c
    return list(merged.values())


def spread(candidates: Sequence[Candidate], limit: int) -> list[Candidate]:
    """Chapters in book order take turns, each offering its most reliable questions first."""
    by_chapter: dict[str, list[Candidate]] = defaultdict(list)
    for c in candidates:
        by_chapter[c.chapter].append(c)
    queues = [sorted(group, key=lambda c: c.rank) for group in by_chapter.values()]
    picked: list[Candidate] = []
    for turn in range(max((len(q) for q in queues), default=0)):
        for queue in queues:
            if turn < len(queue) and len(picked) < limit:
                picked.append(queue[turn])
    return picked


def to_question(c: Candidate) -> Question:
    return Question(c.question, c.sections, True, c.category, 0, (c.key_fact,))


def select(candidates: Sequence[Candidate], sentences: Sequence[Sentence], limit: int
           ) -> list[Candidate]:
    """The checked, de-duplicated candidates, spread over the chapters."""
    fit = [c for c in candidates if not question_problem(c.question, c.key_fact, c.source)]
    return spread(merge_repeats(fit), limit)


def generate_starter(book_dir: Path, max_questions: int = DEFAULT_QUESTIONS,
                     phraser: Phraser | None = None, today: dt.date | None = None,
                     book_label: str | None = None) -> StarterSet:
    """Up to max_questions questions (probes included) for the book in book_dir; `phraser` is
    Claude's (starter_claude.claude_phraser), offline when None or when it fails."""
    if not 10 <= max_questions <= MAX_STARTER_QUESTIONS:
        raise InputError(f"A starter set holds 10 to {MAX_STARTER_QUESTIONS} questions, not "
                         f"{max_questions}.")
    book = parse_book(Path(book_dir))
    sentences = book_sentences(book)
    texts = [s.text for s in sentences]
    outside = probes(texts, book_topic(texts))
    limit = max_questions - len(outside)
    order = {f"{s.chapter_id}#{s.section_id}": n for n, s in enumerate(book.sections)}
    offline = select(sorted(offline_phraser(sentences) + structure_candidates(book, sentences),
                            key=lambda c: order.get(c.sections[0], 0)), sentences, limit)
    generated, notices, picked = OFFLINE, [], offline
    if phraser is not None:
        try:
            phrased = select(phraser(sentences), sentences, limit)
        except ProviderError as e:
            phrased = []
            notices.append(f"Claude could not phrase the questions ({e}); the offline "
                           "templates made them instead.")
        if phrased:
            generated = CLAUDE
            seen = {_key(c.question) for c in phrased} | {_key(c.key_fact) for c in phrased}
            picked = phrased + [c for c in offline if _key(c.question) not in seen
                                and _key(c.key_fact) not in seen][:limit - len(phrased)]
        elif not notices:
            notices.append("Claude returned no question that passed the checks; the offline "
                           "templates made them instead.")
    if not picked:
        notices.append("No sentence of this book fits a question template (definitions, "
                       "acronyms, numbers with units); only out-of-scope probes were made.")
    questions = [to_question(c) for c in picked] + outside
    return StarterSet(questions, [c.source for c in picked] + [""] * len(outside), generated,
                      book_label or str(book_dir), (today or dt.date.today()).isoformat(),
                      notices)
