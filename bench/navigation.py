"""Questions about where the book treats a topic ("Which chapter covers URDF?", "Is there a
chapter on robot ethics?": rag.answer.navigate), from data/eval/navigation.yaml (sample book)
and data/eval/physical-ai-navigation.yaml, answered offline at the current settings. An in-scope
answer is right when it cites a chapter the question expects; an out-of-scope one (a topic
neither book treats) should be refused. Printed per book and in all: in-scope questions, the
answers that name a place, the right ones, out-of-scope questions answered, and how often the
answers at each confidence score were right (what rag.answer.navigate.NAVIGATION_CONFIDENCE is
set from).

    .venv/bin/python bench/navigation.py
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rag  # noqa: E402,F401  (thread settings before numpy/torch load)
from bench.labelled_sets import EVAL, PHYSICAL_AI, SAMPLE_BOOK  # noqa: E402
from rag.tuning.metrics import entry_matches  # noqa: E402

SETS = ((SAMPLE_BOOK, "navigation.yaml"), (PHYSICAL_AI, "physical-ai-navigation.yaml"))


def cites_expected(response, expected) -> bool:
    """The answer cites a section of a chapter (or the section) the question expects."""
    return any(entry_matches(e, c.chapter_id, c.section_id) for c in response.citations
               for e in expected)


def measure() -> Counter:
    from rag.config import load_settings
    from rag.index.load import load_index
    from rag.tuning.evaluate import evaluation_pipeline
    from rag.tuning.questions import load_questions

    counts: Counter = Counter()
    for book, name in SETS:
        if not book.exists() or not (EVAL / name).exists():
            continue
        settings = load_settings(book_dir=book, llm="extractive")
        index, _ = load_index(settings)
        pipeline = evaluation_pipeline(index, settings)
        for q in load_questions(EVAL / name):
            response = pipeline.answer(q.question)
            named = response.status != "refused"
            if not q.in_scope:
                counts[name, "out of scope"] += 1
                counts[name, "answered"] += named
                continue
            right = cites_expected(response, q.expected_sections)
            counts[name, "in scope"] += 1
            counts[name, "named"] += named
            counts[name, "right"] += right
            if named:
                counts["score", response.confidence.score, "answers"] += 1
                counts["score", response.confidence.score, "right"] += right
    return counts


def report(counts: Counter) -> None:
    for _book, name in SETS:
        print(f"{name:30} in scope {counts[name, 'in scope']:3}  named {counts[name, 'named']:3}"
              f"  right {counts[name, 'right']:3}  ·  out of scope "
              f"{counts[name, 'out of scope']:3}  answered {counts[name, 'answered']:3}")
    for score in sorted({k[1] for k in counts if k[0] == "score"}, reverse=True):
        print(f"  confidence {score:.2f}: right {counts['score', score, 'right']} of "
              f"{counts['score', score, 'answers']}")


if __name__ == "__main__":
    report(measure())
