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

from rag.answer.guardrails import check_capability
from rag.book.parse import Book, parse_book
from rag.book.sentences import split_section
from rag.errors import InputError, ProviderError
from rag.tuning.key_facts import key_facts_found
from rag.tuning.questions import MAX_QUESTION_CHARS, Question
from rag.tuning.starter_rules import Phrased, phrase_offline

OFFLINE, CLAUDE = "offline", "claude"
DEFAULT_QUESTIONS, MAX_STARTER_QUESTIONS = 40, 200
MAX_EXPECTED = 3  # sections one repeated question may expect
MAX_FACT_WORDS, MAX_FACT_CHARS = 6, 60
STOP_WORDS = frozenset(
    "a an the of and or to in on at by for with from as is are was were be been it its this "
    "that these those there here than then so but if not no yes can could may might will would "
    "should must do does did has have had which who whom whose what when where why how all any "
    "each every some such very more most less least one two also only just into over under "
    "about per via".split())
MARKUP_RE = re.compile(r"[*_`\[\]|#<>{}\\]")
OFF_TOPIC = ("What is a good recipe for sourdough bread?",
             "Who won the football World Cup in 1998?",
             "How do I repot an orchid without damaging its roots?",
             "Can you recommend a holiday destination in Portugal?",
             "Why did the Western Roman Empire fall?",
             "Which grape varieties make a good Rioja wine?")
REALTIME = ("What is the latest news about {topic} this week?",
            "What will the weather be like tomorrow?",
            "Which company announced the biggest deal right now?")
CODE = ("Write a Python function for a {topic} example.",)
PROBES = (("off_topic", OFF_TOPIC, 3), ("realtime", REALTIME, 2), ("code", CODE, 1))


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
    """Words the book capitalises inside sentences and never writes in lower case ("Gazebo",
    "Kalman"): these stay capitalised in a question; any other word starting a sentence is a
    common word ("Proprioception" -> "proprioception")."""
    capitalised = {m.group(1) for s in sentences
                   for m in re.finditer(r"(?<=[a-z,] )([A-Z][a-z][\w-]*)", s.text)}
    lower = {w for s in sentences for w in re.findall(r"\b[a-z][a-z-]+\b", s.text)}
    return {w for w in capitalised if w.lower() not in lower}


def question_problem(question: str, key_fact: str, source: str) -> str:
    """Why a generated question is not fit to ask ("" when it is)."""
    words = question.split()
    if not 3 <= len(words) <= 30 or len(question) > min(MAX_QUESTION_CHARS, 240):
        return "the question is too short or too long"
    if not question.endswith("?") or not question[0].isupper() or MARKUP_RE.search(question):
        return "the question is not a plain sentence ending in '?'"
    if question.count("(") != question.count(")") or question.count('"') % 2:
        return "the question has unbalanced brackets or quotes"
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
    names = proper_names(sentences)
    out = []
    for s in sentences:
        found = phrase_offline(s.text, s.kind, s.title, names, s.headings)
        if found is not None:
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


def probes(sentences: Sequence[Sentence], topic: str) -> list[Question]:
    """Out-of-scope questions: real-time and code requests the capability guardrail refuses
    whatever the book holds, and off-topic ones whose content words the book does not use."""
    used = Counter(w for s in sentences for w in re.findall(r"[a-z]{4,}", s.text.lower()))
    out = []
    for category, texts, wanted in PROBES:
        kept = []
        for text in texts:
            question = text.format(topic=topic)
            words = [w for w in re.findall(r"[a-z]{4,}", question.lower()) if w not in STOP_WORDS]
            refused = check_capability(question, "", "") is not None
            absent = sum(used[w] > 0 for w in words) * 2 < len(words)
            if (refused if category != "off_topic" else absent and not refused):
                kept.append(Question(question, (), False, category))
        out += kept[:wanted]
    return out


def book_topic(sentences: Sequence[Sentence]) -> str:
    """The acronym the book uses most ("ROS 2", "IMU"), to make probes read like the book's
    readers would ask them; "humanoid robots" style fallback from the commonest long word."""
    acronyms = Counter(re.findall(r"\b[A-Z][A-Z0-9]{1,5}\b", " ".join(s.text for s in sentences)))
    common = [a for a, _ in acronyms.most_common(5) if a not in ("I", "OK", "TODO")]
    if common:
        return common[0]
    words = Counter(w for s in sentences for w in re.findall(r"[a-z]{6,}", s.text.lower())
                    if w not in STOP_WORDS)
    return words.most_common(1)[0][0] if words else "this subject"


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
    outside = probes(sentences, book_topic(sentences))
    limit = max_questions - len(outside)
    offline = select(offline_phraser(sentences), sentences, limit)
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
