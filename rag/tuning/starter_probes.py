"""Out-of-scope probes for a starter set: real-time and code requests the capability guardrail
refuses whatever the book holds, and off-topic questions whose content words the book does not
use, phrased with the book's commonest acronym or long word as its topic."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from rag.answer.guardrails import check_capability
from rag.tuning.questions import Question
from rag.tuning.starter_words import STOP_WORDS

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


def probes(texts: Sequence[str], topic: str) -> list[Question]:
    """Out-of-scope questions: real-time and code requests the capability guardrail refuses
    whatever the book holds, and off-topic ones whose content words the book does not use."""
    used = Counter(w for t in texts for w in re.findall(r"[a-z]{4,}", t.lower()))
    out = []
    for category, phrasings, wanted in PROBES:
        kept = []
        for phrasing in phrasings:
            question = phrasing.format(topic=topic)
            words = [w for w in re.findall(r"[a-z]{4,}", question.lower()) if w not in STOP_WORDS]
            refused = check_capability(question, "", "") is not None
            absent = sum(used[w] > 0 for w in words) * 2 < len(words)
            if (refused if category != "off_topic" else absent and not refused):
                kept.append(Question(question, (), False, category))
        out += kept[:wanted]
    return out


def book_topic(texts: Sequence[str]) -> str:
    """The acronym the book uses most ("ROS 2", "IMU"), to make probes read like the book's
    readers would ask them; "humanoid robots" style fallback from the commonest long word."""
    acronyms = Counter(re.findall(r"\b[A-Z][A-Z0-9]{1,5}\b", " ".join(texts)))
    common = [a for a, _ in acronyms.most_common(5) if a not in ("I", "OK", "TODO")]
    if common:
        return common[0]
    words = Counter(w for t in texts for w in re.findall(r"[a-z]{6,}", t.lower())
                    if w not in STOP_WORDS)
    return words.most_common(1)[0][0] if words else "this subject"
