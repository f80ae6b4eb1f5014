"""Whether the way a reader words a question changes its answer: every development question of both
books (bench/labelled_sets.py) asked as written, and again reworded the way readers write (a
reference to the book, a request instead of a question, a greeting, thanks, no question mark,
all lower case, a slip of the keyboard, a sentence of their own before it), answered offline at
the current settings. Printed per wording: the in-scope answers holding every key fact and the
out-of-scope questions answered (false answers), beside the figures as written; a robust
answerer shows the same two numbers on every line.

    .venv/bin/python bench/phrasing.py                  # every wording
    .venv/bin/python bench/phrasing.py --only greeting  # some of them

2026-11-24, before rag.answer.wording (right of 298 / false of 93): as written 194 / 4;
"According to the book, " 175 / 14; "In this book, " 180 / 15; ", according to the text?" 179 /
9; "What is X?" as "What does the book say about X?" 190 / 5; "Hi, quick question: " 173 / 8;
"Please answer this: " 178 / 7; " Thanks!" 183 / 4; no question mark 185 / 5; "Can you tell me:
" 181 / 10; "I was wondering, " 182 / 7; all lower case, no question mark 184 / 7; "I'm studying
for the exam. " 172 / 10; the 32 "What is X?" questions as "Tell me about X." 191 / 5, "Explain
X." 189 / 5, "Define X" 192 / 5; two letters of the longest word swapped 148 / 6 (181 / 3 once
slips are read as the book's words, rag.answer.spelling); "ELI5: " 0 / 0 ("ELI5" a name the book
never mentions), "In simple terms, " 177 / 9, "Briefly, " 180 / 8, "? Keep it short." 183 / 4.
After: 194 / 4 on every line but all lower case 194 / 5 (the book's acronyms spelled back, a
word neither English nor the book's taken for a name), slips 181 / 3, and a sentence of the
reader's own before the question, unchanged (it is often the question's context: "My robot keeps
falling over. What should I check?").

2026-11-24, before rag.answer.wording.without_own_sentences: "I'm studying for the exam. " 172 /
10, "I'm new to all of this. " 183 / 12, "Our teacher asked us this in class today. " 7 / 0 and
"I have a test on this tomorrow! " 0 / 0 (asking about today or tomorrow: real time), "Sorry if
this is a silly question. " 171 / 9, " Just curious." after it 185 / 5. After: 194 / 4 each.
Slips 181 / 3 -> 192 / 3 once names with capitals inside ("TensroRT"), possessives
("capsotne's"), compounds ("naviagte-to-goal") and English words the book does not use
("repalce") are read too. The 32 "What is X?" questions as "Give me a summary of X." 188 / 6,
"Summarize X" 190 / 4, "What does the author mean by X?" 192 / 6; read as "What is X?": 194 / 4.

2026-11-28, with physical-ai-values.yaml (444 in-scope, 143 out-of-scope questions): 294 / 4 as
written, all lower case 292 / 11, the out-of-scope questions that named a robot or a sensor
("what is the maximum range of a velodyne vlp-16 lidar") answered with another thing's value:
without capitals no name was seen. Once a model number ("vlp-16", "g1") and a word neither
English nor the book's count as names there too (rag.answer.guardrails.question_names), for the
names the book never mentions and for the rare ones a stated value must be about: 292 / 6.
With physical-ai-oos2.yaml (163 out-of-scope questions) and a word neither English nor the book's
counting as a name in every question, British spellings ("behaviour") no longer among them: as
written 294 / 8, all lower case 295 / 9, slips 290 / 7, every other wording 293-295 / 8.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from bench.labelled_sets import development_books  # noqa: E402
from rag.tuning.answers import answer_pass  # noqa: E402


def _lower_first(q: str) -> str:
    """"What is ..." -> "what is ...", but "ROS 2 ..." stays."""
    return q[0].lower() + q[1:] if q[:2] != q[:2].upper() else q


def _typo(q: str) -> str:
    """Two letters of the question's longest word (of seven letters or more) swapped in its
    middle, as a hurried reader types it ("controller" -> "contorller")."""
    words = [w for w in re.findall(r"[A-Za-z]{7,}", q)]
    if not words:
        return q
    word = max(words, key=len)
    i = len(word) // 2
    typo = word[:i] + word[i + 1] + word[i] + word[i + 2:]
    return q.replace(word, typo, 1)


WORDINGS: dict[str, Callable[[str], str]] = {
    "as written": lambda q: q,
    "according to the book": lambda q: "According to the book, " + _lower_first(q),
    "in this book": lambda q: "In this book, " + _lower_first(q),
    "according to the text (after)": lambda q: q.rstrip("?. ") + ", according to the text?",
    "what does the book say about": lambda q: re.sub(
        r"^What (?:is|are) (.+?)\?$", r"What does the book say about \1?", q),
    "tell me about": lambda q: re.sub(r"^What (?:is|are) (.+?)\?$", r"Tell me about \1.", q),
    "explain": lambda q: re.sub(r"^What (?:is|are) (.+?)\?$", r"Explain \1.", q),
    "define": lambda q: re.sub(r"^What (?:is|are) (.+?)\?$", r"Define \1", q),
    "mean by": lambda q: re.sub(r"^What (?:is|are) (.+?)\?$", r"What does the author mean by \1?",
                                q),
    "summary of": lambda q: re.sub(r"^What (?:is|are) (.+?)\?$", r"Give me a summary of \1.", q),
    "summarize": lambda q: re.sub(r"^What (?:is|are) (.+?)\?$", r"Summarize \1", q),
    "greeting": lambda q: "Hi, quick question: " + q,
    "request": lambda q: "Please answer this: " + _lower_first(q),
    "can you tell me": lambda q: "Can you tell me: " + q,
    "wondering": lambda q: "I was wondering, " + _lower_first(q),
    "thanks": lambda q: q + " Thanks!",
    "eli5": lambda q: "ELI5: " + q,
    "in simple terms": lambda q: "In simple terms, " + _lower_first(q),
    "briefly": lambda q: "Briefly, " + _lower_first(q),
    "keep it short": lambda q: q.rstrip("?") + "? Keep it short.",
    "no question mark": lambda q: q.rstrip("?"),
    "lower case, no question mark": lambda q: q.lower().rstrip("?"),
    "own sentence before": lambda q: "I'm studying for the exam. " + q,
    "new to this": lambda q: "I'm new to all of this. " + q,
    "asked in class": lambda q: "Our teacher asked us this in class today. " + q,
    "sorry": lambda q: "Sorry if this is a silly question. " + q,
    "test tomorrow": lambda q: "I have a test on this tomorrow! " + q,
    "just curious (after)": lambda q: q + " Just curious.",
    "typo": lambda q: _typo(q),
}


def measure(names: list[str]) -> list[tuple[str, int, int, int]]:
    """(wording, right, false answers, questions it changed), summed over both books."""
    totals = {name: [0, 0, 0] for name in names}
    for settings, _index, pipeline, questions in development_books():
        for name in names:
            reworded = [dataclasses.replace(q, question=WORDINGS[name](q.question))
                        for q in questions]
            outcomes = answer_pass(pipeline, reworded, settings, settings.w_dense,
                                   settings.threshold)
            row = totals[name]
            row[0] += sum(bool(o.key_facts) and all(o.facts_found) for o in outcomes)
            row[1] += sum(not o.in_scope and o.status != "refused" for o in outcomes)
            row[2] += sum(a.question != b.question for a, b in zip(questions, reworded,
                                                                    strict=True))
    return [(name, *totals[name]) for name in names]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(WORDINGS), metavar="WORDING",
                        help=f"some of: {', '.join(WORDINGS)}")
    args = parser.parse_args()
    names = ["as written", *[n for n in (args.only or WORDINGS) if n != "as written"]]
    print(f"{'wording':<32} {'right':>6} {'false':>6} {'reworded':>9}")
    for name, right, false, changed in measure(names):
        print(f"{name:<32} {right:>6} {false:>6} {changed:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
