"""Starter questions from a book's structure rather than from one sentence: a section whose
heading names a task ("Install the CLI", "Handling errors", "How to receive feedback") is asked as
"How do I <task>?", and a heading "<things> to <verb>" over a list ("Words to avoid") as "Which
<things> should I <verb>?".

Which words are verbs is read from the book itself: no part-of-speech tagger is installed, and a
word the book writes after "to", "can", "you" ... more often than after an article or "of" is
one ("install", "declare", "handle"); "-ing" headings are tried in their base forms against the
same counts ("Handling" -> "handle"). So no book's vocabulary is written here.

The key fact is what the section itself marks as salient, in its first units: a code span in its
prose, a bold or italic term, a number with what it counts ("25 words"); for a list heading, the
list's first item. The question's source is the section's unit that holds it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from rag.book.inline import clean_inline
from rag.tuning.key_facts import key_facts_found
from rag.tuning.starter_rules import TITLE_NOISE_RE
from rag.tuning.starter_words import STOP_WORDS

HOW_TO = "how_to"
VERB_BEFORE = frozenset("to can will should must may might would could you we not don't "
                        "please".split())
NOUN_BEFORE = frozenset("the a an this that these those its their our your his her my of each "
                        "every".split())
# a task that points at something outside the heading cannot be asked on its own
DANGLING = frozenset("it them this that these those here there above below following others "
                     "first again instead".split())
NOT_VERBS = STOP_WORDS | {"us", "me", "him", "her", "them", "i", "they", "we", "you"}
# what may follow a task's verb ("Return a response", "Declare constants", "Install Miniconda",
# "Walk on ..."): a bare singular noun there reads as a noun phrase ("Use case", "Control flow")
OBJECT_START = frozenset("a an the your my its their our some all multiple each every any more "
                         "on with in into from to for up out down off over through by about "
                         "between without".split())
PERSON = {"your": "my", "yours": "mine", "you": "me", "yourself": "myself"}
FIRST_UNITS = 4  # the key fact is looked for where a reader of the section looks first
MAX_TASK_WORDS = 8
CODE_CHARS_RE = re.compile(r"[()\[\]{}=<>/\\|@$#:;`\"“”!+*]|\.\.")
CODE_SPAN_RE = re.compile(r"`([^`\n]{2,60})`")
STRONG_RE = re.compile(r"\*\*([^*\n]{2,60})\*\*")
EMPHASIS_RE = re.compile(r"(?<![\w*])\*([^*\s][^*\n]{0,58}[^*\s])\*(?![\w*])")
COUNTED_RE = re.compile(r"(?<![\w.,-])\d{1,9}(?:[.,]\d{1,6}){0,3}\s([a-z]{3,20}s)\b")
IDENTIFIER_RE = re.compile(r"[A-Z_.(<]|\w \w")  # a code span that is no plain English word
ITEM_RE = re.compile(r"^[ \t]{0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+(\S[^\n]{0,300})", re.MULTILINE)
WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]{0,40}")


@dataclass(frozen=True)
class Usage:
    """How the book uses its words: as verbs, and which it capitalises mid-sentence."""

    verbs: frozenset[str]
    names: frozenset[str]
    noun_pairs: frozenset[str] = frozenset()  # "use case": two words after "the", "a" ...


@dataclass(frozen=True)
class HeadingQuestion:
    question: str
    key_fact: str
    source: str


def read_usage(texts: Sequence[str]) -> Usage:
    """One pass over the book's units (linear: 400k words in about a second)."""
    as_verb, as_noun, upper, lower = Counter(), Counter(), Counter(), Counter()
    pairs: set[str] = set()
    for text in texts:
        previous, before = ".", "."
        for word in WORD_RE.findall(text):
            low = word.lower()
            if before in NOUN_BEFORE:
                pairs.add(f"{previous} {low.removesuffix('s')}")
            if previous in VERB_BEFORE and low not in NOT_VERBS:
                as_verb[low] += 1
            elif previous in NOUN_BEFORE:
                as_noun[low] += 1
            if word[0].isupper() and previous != ".":
                upper[low] += 1
            elif word.islower():
                lower[low] += 1
            previous, before = low, previous
    verbs = {w for w, n in as_verb.items() if n >= 2 and n > as_noun[w]}
    names = {w for w, n in upper.items() if n >= lower[w]}
    return Usage(frozenset(verbs), frozenset(names), frozenset(pairs))


def base_form(gerund: str, verbs: frozenset[str]) -> str:
    """"handling" -> "handle", "running" -> "run", "reading" -> "read"; "" when no form of it
    is a verb of the book."""
    stem = gerund.lower()[:-3]
    for form in (stem + "e", stem, stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else ""):
        if form in verbs:
            return form
    return ""


def heading_words(title: str) -> list[str]:
    """The heading without its numbering, wrapping brackets, or a trailing colon."""
    cleaned = TITLE_NOISE_RE.sub("", title).strip(" :.-")
    if cleaned[:1] in "[(" and cleaned[-1:] in "])":
        cleaned = cleaned[1:-1].strip()
    return cleaned.split()


def as_written(word: str, usage: Usage) -> str:
    """A heading word as it reads inside a sentence: "Path" -> "path", "FastAPI", "Docker"."""
    if word in PERSON:
        return PERSON[word]
    if word.lower() in PERSON:
        return PERSON[word.lower()]
    if word[1:] != word[1:].lower() or any(c.isdigit() for c in word):
        return word
    return word if word.lower() in usage.names else word.lower()


def task_question(title: str, usage: Usage) -> str:
    """"How do I <task>?" for a heading that names a task, else ""."""
    words = heading_words(title)
    if CODE_CHARS_RE.search(" ".join(words)) or not 2 <= len(words) <= MAX_TASK_WORDS + 2:
        return ""
    if [w.lower() for w in words[:2]] == ["how", "to"]:
        words = words[2:]
    first = words[0].lower() if words else ""
    if "'" in first or "’" in first:
        return ""  # "Let's Encrypt", "Don't repeat yourself": a name or advice, no task
    verb = base_form(first, usage.verbs) if first.endswith("ing") else (
        first if first in usage.verbs else "")
    rest = words[1:]
    if not verb or not rest or len(words) > MAX_TASK_WORDS or not object_start(rest[0], usage):
        return ""
    if {f"{w} {rest[0].lower().removesuffix('s')}" for w in (verb, first)} & usage.noun_pairs:
        return ""  # "Use Cases", "Computing Devices": the book writes "the use cases"
    if len(rest) == 2 and rest[0].lower() == "the" and as_written(rest[1], usage).islower():
        return ""  # "Load the dataset", "Define the model": which one, on an empty chat?
    if any(w.lower() in DANGLING for w in rest) or not re.search(r"[A-Za-z]{3}", " ".join(rest)):
        return ""
    return f"How do I {' '.join([verb, *(as_written(w, usage) for w in rest)])}?"


def object_start(word: str, usage: Usage) -> bool:
    """Can this word open what a task's verb acts on (see OBJECT_START)?"""
    low = word.lower()
    plural = low.endswith("s") and not low.endswith(("ss", "us", "is"))
    return low in OBJECT_START or plural or as_written(word, usage) != low


def list_question(title: str, usage: Usage) -> str:
    """"Which words should I avoid?" for "Words to avoid"; else ""."""
    words = heading_words(title)
    if len(words) not in (3, 4) or words[-2].lower() != "to" or CODE_CHARS_RE.search(title):
        return ""
    verb = words[-1].lower()
    things = [as_written(w, usage) for w in words[:-2]]
    if verb not in usage.verbs or not things[-1].endswith("s"):
        return ""
    return f"Which {' '.join(things)} should I {verb}?"


def salient_phrases(raw: str, usage: Usage) -> list[str]:
    """What the section marks out: code spans that read as code (outside code blocks) first,
    then in reading order other code spans, bold and italic terms, and numbers with what they
    count ("25 words"; not "9 shows" of "Listing 5-9 shows")."""
    prose, fenced = [], False
    for line in raw.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            prose.append(line)
    text = "\n".join(prose)
    found = [(m.start(), m.group(1)) for r in (CODE_SPAN_RE, STRONG_RE, EMPHASIS_RE)
             for m in r.finditer(text)] + [(m.start(), m.group(0)) for m in
                                           COUNTED_RE.finditer(text)
                                           if m.group(1)[:-1] not in usage.verbs]
    phrases = [p.strip() for _, p in sorted(found)]
    code = [p for p in phrases if IDENTIFIER_RE.search(p) and p in text and f"`{p}`" in text]
    if code:  # where the section names code, a bold term is a label, not the answer
        phrases = [p for p in phrases if f"`{p}`" in text or COUNTED_RE.fullmatch(p)]
    plain = {p for p in phrases if p not in code and f"`{p}`" in text and len(p) < 5}
    return [p for p in dict.fromkeys(code + phrases) if fit_fact(p) and p not in plain]


def fit_fact(phrase: str) -> bool:
    """Short, more than punctuation or a stop word, no web address."""
    words = phrase.split()
    return (0 < len(words) <= 4 and len(phrase) <= 40 and "://" not in phrase
            and len(re.sub(r"\W", "", phrase)) >= 3 and phrase.lower() not in STOP_WORDS)


def heading_question(title: str, raw: str, units: Sequence[tuple[str, str]], usage: Usage
                     ) -> HeadingQuestion | None:
    """The section's structural question with its key fact and the unit it is quoted from;
    `units` are (text, kind) in book order."""
    if question := list_question(title, usage):
        # the raw items: a one-word item ("utilize") is no quotable unit of its own
        items = [clean_inline(m.group(1)) for m in ITEM_RE.finditer(raw)]
        fact = _lead_words(items[0]) if items else ""
        return HeadingQuestion(question, fact, items[0]) if fact else None
    if not (question := task_question(title, usage)):
        return None
    first = [text for text, kind in units if kind in ("prose", "item")][:FIRST_UNITS]
    stems = {w[:5] for w in re.findall(r"\w{3,}", question.lower())}
    # the answer sentence is about the task: it shares a word of what the task acts on
    topic = {w[:5] for w in re.findall(r"\w{3,}", question.lower())[2:]} - STOP_WORDS
    first = [t for t in first if topic & {w[:5] for w in re.findall(r"\w{3,}", t.lower())}]
    for phrase in salient_phrases(raw, usage):
        if key_facts_found(question, [phrase])[0] or phrase.lower()[:5] in stems:
            continue
        source = next((t for t in first if key_facts_found(t, [phrase])[0]), "")
        if source:
            return HeadingQuestion(question, phrase, source)
    return None


def _lead_words(item: str) -> str:
    """An item's term: its words before a bracket, comma, colon or dash, at most four."""
    lead = re.split(r"\s[(–—-]\s?|[(,:;]", item, maxsplit=1)[0].split()
    return " ".join(lead) if 0 < len(lead) <= 4 else ""
