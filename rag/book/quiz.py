"""The book's own review questions and the units that answer them.

Textbooks end a lesson with questions and their answers ("Check Your Understanding"): a
collapsible `<details><summary>1. Why is ...?</summary> answer </details>`, or "**Question 3**:
..." lines with "**Answer 3**: ..." paragraphs further down. The questions themselves are not
quotable (rag.book.sentences drops them), but a reader who asks the same thing in other words
is closer in meaning to the book's question than to any one sentence of its answer. So each
unit of an answer keeps the question it answers (`Quiz.asked_by`), ingest embeds those
questions, and the answerer scores such a unit by whichever is closer to the reader's question:
the unit or the question it answers (rag.answer.unit_scoring). On the development sets this
made 4 more answers hold every key fact (physical-ai.yaml 46 -> 48, physical-ai-train1.yaml
13 -> 15), none fewer.
"""

from __future__ import annotations

import bisect
import itertools
import re

from rag.book.inline import clean_inline

# A line that asks: "**Question 3**: Why ...?", "1. What's ...?" (a <summary> once the parser
# has dropped the tags) or "**How do I ...?**"; group 1 is its number when it has one.
BOLD = r"(?:\*\*|__)"
QUESTION_RE = re.compile(
    rf"^[ \t]*+(?![-*+][ \t])(?:{BOLD}?(?:Question|Q)[ \t]*(\d{{1,3}}){BOLD}?[ \t]*[:.]{BOLD}?"
    rf"[ \t]*|\d{{1,3}}[.)][ \t]+|{BOLD})?(.{{8,300}}?\?){BOLD}?[ \t]*$", re.I | re.M)
ANSWER_RE = re.compile(rf"^[ \t]*+{BOLD}?(?:Answer|A)[ \t]*(\d{{1,3}}){BOLD}?[ \t]*[:.]{BOLD}?",
                       re.I | re.M)
# A line that states a problem the text under it solves: "**Issue: Isaac Sim won't launch**",
# "- **Symptom**: subscriber is silent", or "**Symptom**:" over the error message in a code block.
PROBLEM_RE = re.compile(rf"^[ \t]*+(?:[-*+][ \t]+)?{BOLD}((?:Issue|Problem|Symptom|Error)s?\b"
                        rf"[^*_\n]*){BOLD}[ \t]*:?[ \t]*(.*)$", re.I | re.M)
FENCED_RE = re.compile(r"[ \t]*\n[ \t]*(```|~~~)[^\n]{0,200}\n(.{0,5000}?)\n[ \t]*\1[^\n]{0,200}",
                       re.S)
STOP_RE = re.compile(r"^[ \t]*+(?:#{1,6}[ \t]|-{3,}[ \t]*$|\*{3,}[ \t]*$)", re.M)  # heading, rule
# A heading that asks, or that names a problem its section solves.
ASKING_HEADING_RE = re.compile(r"\?\s*+$|^(?:Q\d{1,3}|Question\s*+\d{0,3}|Problem|Issue|Error|"
                               r"Mistake\s*+\d{0,3}|Pitfall|Symptom|Troubleshooting)\s*+[:.]",
                               re.I)
PROBE = 60  # characters of a unit (normalised) that must lie inside an answer
MAX_ANSWER_CHARS = 2000
MAX_QUESTION_CHARS = 300
MAX_PAIRS = 100  # a review section asks a handful; a hostile one must not cost minutes


def normalise(text: str) -> str:
    """Lower case words only: how a unit is found inside the answer's raw Markdown."""
    return " ".join(re.sub(r"[\W_]+", " ", clean_inline(text)).lower().split())


def quiz_pairs(text: str) -> list[tuple[str, str]]:
    """(question, normalised answer) for each question the section answers: "**Answer 3**:"
    answers the "**Question 3**:" line, and a question line without a number is answered by
    the text that follows it, up to the next question, answer, heading or rule."""
    fences = code_spans(text)

    starts = [a for a, _ in fences]

    def inside(at: int) -> bool:
        k = bisect.bisect_left(starts, at) - 1  # the last fence opening before `at`
        return k >= 0 and at < fences[k][1]

    def outside(pattern: re.Pattern) -> list[re.Match]:  # a "# comment" in code is no heading
        return [m for m in pattern.finditer(text) if not inside(m.start())]

    asks, answers, problems = outside(QUESTION_RE), outside(ANSWER_RE), outside(PROBLEM_RE)
    bounds = sorted([m.start() for m in asks + answers + problems] +
                    [m.start() for m in outside(STOP_RE)] + [len(text)])

    def body(start: int) -> str:
        start = min(start, len(text))  # a question on the last line is answered by nothing
        end = bounds[min(bisect.bisect_left(bounds, start), len(bounds) - 1)]
        return normalise(text[start:min(end, start + MAX_ANSWER_CHARS)])

    numbered = {m.group(1): clean_inline(m.group(2)) for m in asks if m.group(1)}
    pairs = [(numbered[m.group(1)], body(m.end())) for m in answers if m.group(1) in numbered]
    pairs += [(clean_inline(m.group(2)), body(m.end() + 1)) for m in asks if not m.group(1)]
    for m in problems:
        label, rest, end = m.group(1).strip(" :"), m.group(2).strip(), m.end()
        code = FENCED_RE.match(text, end) if not rest else None
        if code:  # the error message itself, as the reader would paste it
            rest, end = "; ".join(code.group(2).strip().splitlines()[:3]), code.end()
        problem = clean_inline(f"{label}: {rest}" if rest else label)
        if len(problem.split()) > 1:  # "Symptom" alone states nothing
            pairs.append((problem[:MAX_QUESTION_CHARS], body(end + 1)))
    return [(question, answer) for question, answer in pairs if question and answer]


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of each fenced block, found line by line (a fence left open runs to
    the end of the text)."""
    spans, offset, opened, marker = [], 0, -1, ""
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if opened < 0 and stripped.startswith(("```", "~~~")):
            opened, marker = offset, stripped[:3]
        elif opened >= 0 and stripped.startswith(marker):
            spans.append((opened, offset + len(line)))
            opened = -1
        offset += len(line)
    if opened >= 0:
        spans.append((opened, len(text)))
    return spans


class Quiz:
    """A section's review questions (at most MAX_PAIRS), and which of them a unit answers."""

    def __init__(self, text: str) -> None:
        self.pairs = quiz_pairs(text)[:MAX_PAIRS]
        # one string to search (in C) instead of one per question: a unit is looked up in time
        # linear in the answers' size whatever their number
        self._answers = "\0".join(answer for _, answer in self.pairs)
        self._starts = list(itertools.accumulate((len(a) + 1 for _, a in self.pairs), initial=0))

    def asked_by(self, unit_text: str) -> str:
        """The review question whose answer holds this unit, or ""."""
        probe = normalise(unit_text)[:PROBE]  # units carry no "Answer 3:" label
        at = self._answers.find(probe) if probe else -1
        return self.pairs[bisect.bisect_right(self._starts, at) - 1][0] if at >= 0 else ""


def heading_ask(title: str) -> str:
    """The section's heading when it is a question or names a problem, else "";
    `Quiz.asked_by` wins over it for a unit of a review answer."""
    title = clean_inline(title)
    return title if ASKING_HEADING_RE.search(title) else ""
