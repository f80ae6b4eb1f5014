"""Whether a question asked as a follow-up is answered as well as asked alone: every development
question of both books (bench/labelled_sets.py) that names one of the book's names once ("URDF",
"Nav2", "Isaac Sim", ...) is asked again after "What is <name>?", with the name replaced by "it"
("What does it stand for?"), answered offline at the current settings with the first question
and its answer as the conversation. Printed: in-scope answers holding every key fact as
written, and as follow-ups; out-of-scope questions answered either way.

    .venv/bin/python bench/follow_ups.py

2026-11-24 (23 questions, 2 of them out of scope): before rag.answer.context.standalone (the
follow-up searched together with the question before it, and answered as written), 12 of the 19
in-scope questions answered right alone were right as follow-ups; after, 19. No false answer
either way.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from bench.labelled_sets import development_books  # noqa: E402
from rag.answer.shape import question_subject  # noqa: E402
from rag.index.lexical import book_casing  # noqa: E402
from rag.providers.base import Message  # noqa: E402
from rag.tuning.key_facts import key_facts_found  # noqa: E402

# a name used as a thing, which "it" can stand for: before a verb or the question's end ("What
# does URDF stand for?"), not as a modifier ("ROS 2", "my URDF joint limits", "500 Hz")
AS_THING_RE = re.compile(r"^(?:['’]s)?(?=\s*(?:[?,.;]|$)|\s+(?:is|are|was|were|does|do|did|can|"
                         r"could|should|will|would|uses?|stands?|works?|means?|have|has|needs?|"
                         r"runs?|handles?|compares?|differs?|supports?|provides?|requires?|gets?|"
                         r"comes?)\b)")
MODIFIED_RE = re.compile(r"(?:\b(?:my|the|a|an|your|our|this|that|these|those|its|their|of|much|"
                         r"many)|\d)\s*$", re.IGNORECASE)


def follow_up(question: str, names: dict[str, str]) -> tuple[str, str] | None:
    """(the name, the question with it as "it"/"its"), for a question about what a thing is,
    does or stands for ("What does URDF stand for?": rag.answer.shape.question_subject), or one
    naming one book name once, as a thing (AS_THING_RE), not at its start (a name opening the
    question would read "It ...")."""
    subject = question_subject(question)
    if subject and len(subject.split()) <= 4 and question.count(subject) == 1 and \
            subject.split()[0].lower() not in ("it", "its", "they", "this", "that"):
        found = [(subject, question.index(subject))]
    else:
        found = [(m.group(0), m.start()) for m in re.finditer(r"[A-Za-z][\w.+-]*[\w+]",
                                                               question)
                 if names.get(m.group(0).lower()) == m.group(0)]
    if len(found) != 1 or found[0][1] == 0:
        return None
    name, start = found[0]
    if not AS_THING_RE.match(question[start + len(name):]) or \
            MODIFIED_RE.search(question[:start]):
        return None
    rest = question[start + len(name):]
    if rest.startswith(("'s", "’s")):
        return name, question[:start] + "its" + rest[2:]
    return name, question[:start] + "it" + rest


def measure() -> dict[str, int]:
    totals = dict.fromkeys(("questions", "right alone", "right as follow-up", "out of scope",
                            "false alone", "false as follow-up"), 0)
    for _settings, index, pipeline, questions in development_books():
        names = book_casing(index, names=True)
        for q in questions:
            made = follow_up(q.question, names)
            if made is None:
                continue
            name, again = made
            first = f"What is {name}?"
            history = [Message("user", first), Message("assistant",
                                                       pipeline.answer(first).answer)]
            alone, later = pipeline.answer(q.question), pipeline.answer(again, history=history)
            totals["questions"] += 1
            if q.in_scope and q.key_facts:
                totals["right alone"] += all(key_facts_found(alone.answer, q.key_facts))
                totals["right as follow-up"] += all(key_facts_found(later.answer, q.key_facts))
            elif not q.in_scope:
                totals["out of scope"] += 1
                totals["false alone"] += alone.status != "refused"
                totals["false as follow-up"] += later.status != "refused"
    return totals


def main() -> int:
    for name, value in measure().items():
        print(f"{name:<22} {value:>5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
