"""A misspelt word of a question read as the book's word it stands for.

BM25 matches words exactly and MiniLM splits an unknown word into pieces, so one slip costs the
answer: with two letters of its longest word swapped ("contorller"), 148 of the 298 development
questions were answered with every key fact, against 194 as written (bench/phrasing.py). A
word of MIN_LETTERS or more that is neither the book's nor English (pyspellchecker's
dictionary), one edit (a letter left out, added, changed, or two swapped) away from words the
book uses, is read as the one the book uses most ("contorller" -> "controller", "rcply" ->
"rclpy"; a British spelling as the book's American one), else as the English word that two
swapped letters make ("repalce" -> "replace"; not one other edit away: "voxel" is the reader's
term, not "vowel"). A capitalised word inside the question, or one with capitals inside it, is a
name, read as a name the book writes with its capital one edit away ("Jeston" -> "Jetson",
"TensroRT" -> "TensorRT": 180 -> 181 -> 192 right with the slips above, with possessives,
hyphenated compounds and file names' words read too: "capsotne's", "naviagte-to-goal"). The
reader is told what was read otherwise (a notice). Anything else stays as typed: an English word
the book never uses is the reader's own ("lagging" is no slip for "logging"), and a name the
book never mentions ("Flask") is reported as such by the content guardrail.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Mapping

MIN_LETTERS = 5  # a shorter word has too many neighbours one edit away
# A misspelt name is read as a word the book writes with a capital this often or more inside a
# sentence ("Windows" 7 of 8 times, "TensorRT" 7 of 8: a lower-case mention in a command or a
# path does not make them common words).
NAME_SHARE = 0.75
MAX_LETTERS = 30  # a longer run of letters is no word (and its edits would fill megabytes)
# A word, or a name with capitals inside ("TensorRT"), not part of a path, a file name or an
# identifier; a possessive's "'s", a hyphenated compound's other words and a file name's
# extension may follow ("capsotne's", "naviagte-to-goal", "pacakge.xml").
WORD_RE = re.compile(rf"(?<![\w./'])[A-Za-z][A-Za-z]{{{MIN_LETTERS - 1},{MAX_LETTERS - 1}}}"
                     r"(?![\w/]|\.\w+[./]|['’](?![sS]\b))")


def one_edit(word: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion away."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    return ({a + b[1:] for a, b in splits if b} | swapped(word)
            | {a + c + b[1:] for a, b in splits if b for c in string.ascii_lowercase}
            | {a + c + b for a, b in splits for c in string.ascii_lowercase})


def swapped(word: str) -> set[str]:
    """Every string with two neighbouring letters of `word` swapped."""
    return {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}


@functools.cache
def english() -> Mapping[str, int]:
    """The words of pyspellchecker's English dictionary (160,572, inflections included:
    "putting", "lagging", "sliders", "outage") with how often English uses them, the words a
    question may use that the book does not; loaded once (0.2 s), empty when it cannot be read
    (then nothing is corrected)."""
    try:
        from spellchecker import SpellChecker

        return dict(SpellChecker(language="en", distance=1).word_frequency.dictionary)
    except (ImportError, OSError, ValueError):
        return {}


# British spellings the dictionary lacks, and their American endings: "behaviour", "recognise",
# "parameterised", "centre", "analyse", "defence"
_BRITISH = ((r"our(s|ed|ing)?$", r"or\1"), (r"is(e|es|ed|ing|ation|ations)$", r"iz\1"),
            (r"ys(e|es|ed|ing)$", r"yz\1"), (r"tre(s)?$", r"ter\1"), (r"ence$", "ense"))


def american(word: str) -> str:
    """The word with a British ending spelt the American way ("behaviour" -> "behavior");
    the word itself when it has none."""
    for ending, us in _BRITISH:
        if re.search(ending, word):
            return re.sub(ending, us, word)
    return word


def is_english(word: str) -> bool:
    """Whether a lower-case word is English (english()), in British spelling too."""
    return word in english() or american(word) in english()


def corrections(question: str, words: Mapping[str, int], names: Mapping[str, str] | None = None
                ) -> dict[str, str]:
    """The question's misspelt words and the book's word each stands for (`words`:
    rag.index.lexical.book_words). An English word (english()) is no slip. A capitalised word
    inside the question is a name: read as one of the book's `names` (lower case -> as the book
    writes it: rag.index.lexical.book_casing with names) one edit away ("Jeston" -> "Jetson"),
    or left for the content guardrail to report as a name the book never mentions ("Flask")."""
    fixes: dict[str, str] = {}
    known, names = english(), names or {}
    if not known:
        return fixes
    for typed in set(WORD_RE.findall(question)):
        lower = typed.lower()
        if lower in words or lower in known or lower in names:
            continue  # the book's word or name ("capex": CapEx), or English ("lagging")
        name = any(ch.isupper() for ch in typed[1:]) or (
            typed[0].isupper() and not question.startswith(typed))
        edits = one_edit(lower)
        if name:
            near = [w for w in edits if w in names]
            if near:
                fixes[typed] = names[max(near, key=lambda w: (words.get(w, 0), w))]
            continue
        # the book's word used most, else the English word two swapped letters make ("repalce"
        # -> "replace"): a word one other edit from an English one is often a term of the
        # reader's ("voxel", not "vowel")
        best = max((w for w in edits if w in words), key=lambda w: (words[w], w), default="") \
            or max((w for w in swapped(lower) if w in known), key=lambda w: (known[w], w),
                   default="")
        if best:
            fixes[typed] = best.capitalize() if typed[0].isupper() else best
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


# Letters of a script other than Latin's: a question written in Chinese, Russian or Arabic
OTHER_SCRIPT_RE = re.compile(r"[^\W\d_a-zA-Z\u00C0-\u024F]")
FOREIGN_WORD_RE = re.compile(r"[^\W\d_]{3,}")


def foreign(question: str, words: Mapping[str, int], names: Mapping[str, str] | None = None
            ) -> bool:
    """Whether the question is written in another language than English: "¿" or "¡", letters of
    another script for a third or more of its letters, or two or more of its words of three
    letters or more (lower case, or the first), three in five of them or more, neither English
    (english()) nor the book's (`words`, `names`): "Was ist ein Roboter?". MiniLM and BM25 read
    English, so such a question was refused as a topic the book does not cover ("¿Qué es ROS
    2?") with nothing said of its language. Not "How does MuJoCo's MJX compare to Brax?"."""
    known = english()
    if not known:
        return False
    if "¿" in question or "¡" in question:
        return True
    letters = [ch for ch in question if ch.isalpha()]
    if letters and len(OTHER_SCRIPT_RE.findall(question)) * 3 >= len(letters):
        return True
    # lower-case words and the first: a name the book never mentions is not a foreign word
    found = [m.group(0).lower() for m in FOREIGN_WORD_RE.finditer(question)
             if m.group(0).islower() or not question[:m.start()].strip(" ¿¡\"'(")]
    unknown = [w for w in found if w not in known and w not in words and w not in (names or {})]
    return len(unknown) >= 2 and len(unknown) * 5 >= len(found) * 3
