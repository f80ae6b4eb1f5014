"""A misspelt word of a question read as the book's word it stands for.

BM25 matches words exactly and MiniLM splits an unknown word into pieces, so one slip costs the
answer: with two letters of its longest word swapped ("contorller"), 148 of the 298 development
questions were answered with every key fact, against 194 as written (bench/phrasing.py). A
word of MIN_LETTERS or more that is neither the book's nor English (pyspellchecker's
dictionary), one edit (a letter left out, added, changed, or two swapped) away from words the
book uses, is read as the one the book uses most ("contorller" -> "controller", "rcply" ->
"rclpy"; a British spelling as the book's American one); a capitalised word inside the
question is a name, read as a name the book writes with its capital one edit away ("Jeston" ->
"Jetson": 180 -> 181 right with the slips above). The reader is told what was read otherwise
(a notice). Anything else stays as typed: an English word the book never uses is the reader's
own ("lagging" is no slip for "logging"), and a name the book never mentions ("Flask") is
reported as such by the content guardrail.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping

MIN_LETTERS = 5  # a shorter word has too many neighbours one edit away
MAX_LETTERS = 30  # a longer run of letters is no word (and its edits would fill megabytes)
WORD_RE = re.compile(rf"(?<![\w./'-])[A-Za-z][a-z]{{{MIN_LETTERS - 1},{MAX_LETTERS - 1}}}"
                     r"(?![\w./'-])")


def one_edit(word: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion away."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return ({a + b[1:] for a, b in splits if b}
            | {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
            | {a + c + b[1:] for a, b in splits if b for c in string.ascii_lowercase}
            | {a + c + b for a, b in splits for c in string.ascii_lowercase})


@functools.cache
def english() -> frozenset[str]:
    """The words of pyspellchecker's English dictionary (160,572, inflections included:
    "putting", "lagging", "sliders", "outage"), the words a question may use that the book does
    not; loaded once (0.2 s), empty when it cannot be read (then nothing is corrected)."""
    try:
        from spellchecker import SpellChecker

        return frozenset(SpellChecker(language="en", distance=1).word_frequency.dictionary)
    except (ImportError, OSError, ValueError):
        return frozenset()


def corrections(question: str, words: Mapping[str, int], names: Mapping[str, str] | None = None
                ) -> dict[str, str]:
    """The question's misspelt words and the book's word each stands for (`words`:
    rag.index.lexical.book_words). An English word (english()) is no slip. A capitalised word
    inside the question is a name: read as one of the book's `names` (lower case -> as the book
    writes it: rag.index.lexical.book_casing with names) one edit away ("Jeston" -> "Jetson"),
    or left for the content guardrail to report as a name the book never mentions ("Flask")."""
    fixes: dict[str, str] = {}
    known = english()
    if not known:
        return fixes
    for typed in set(WORD_RE.findall(question)):
        lower = typed.lower()
        if lower in words or lower in known:
            continue  # the book's word, or an English one ("lagging", "sliders")
        name = typed[0].isupper() and not question.startswith(typed)
        pool = (names or {}) if name else words
        near = [w for w in one_edit(lower) if w in pool and w != lower]
        if near:
            best = max(near, key=lambda w: (words.get(w, 0), w))
            fixes[typed] = pool[best] if name else (
                best.capitalize() if typed[0].isupper() else best)
    return fixes


def corrected(question: str, words: Mapping[str, int], names: Mapping[str, str] | None = None,
              fixes: dict[str, str] | None = None) -> str:
    """The question with each misspelt word replaced by the book's word (corrections()); what
    was replaced is added to `fixes` when given."""
    found = corrections(question, words, names)
    if fixes is not None:
        fixes.update(found)
    if not found:
        return question
    return WORD_RE.sub(lambda m: found.get(m.group(0), m.group(0)), question)
