"""What kind of question this is, so retrieval can be steered by it (the original design's query
classification): factual, conceptual, comparison, procedural, code or real-time.

Offline the type comes from rules (below, first match wins); with Claude configured the pipeline
may ask Claude instead (rag.answer.llm), falling back to the rules. Each type can carry its own
blend weight and threshold (Settings.retrieval_for), learned per category of a labelled set and
adopted only where cross-validation shows a gain (rag.tuning.per_type).
"""

from __future__ import annotations

import re

from rag.answer.guardrails import asks_for_code, asks_realtime
from rag.errors import RagError
from rag.providers.base import LLM, Message
from rag.types import QUERY_TYPES

TYPE_LABELS = {"factual": "Factual", "conceptual": "Conceptual", "comparison": "Comparison",
               "procedural": "Procedural", "code": "Code", "realtime": "Real-time"}
# A labelled set's `category` column, where its names differ from the types.
CATEGORY_TYPES = {"troubleshooting": "procedural", "how-to": "procedural", "howto": "procedural",
                  "real-time": "realtime", "real_time": "realtime", "definition": "factual"}

COMPARISON_RE = re.compile(
    r"\b(differen(?:ce|t|ces)|differ|compared? (?:with|to)|comparison|versus|vs\.?|"
    r"trade-?offs?|better (?:choice )?than|worse than|rather than|instead of|"
    r"strengths and weaknesses|pros and cons|same (?:thing )?as|which one|or\b[^?]{0,60}\bwhich)\b"
    r"|^\W*(?:is|are|should|when (?:is|should))\b[^?]{0,80}\bor\b",
    re.IGNORECASE)
PROCEDURAL_RE = re.compile(
    r"^\W*(?:how (?:do|can|should|would) (?:i|you|we)\b|how to\b|what (?:should|do|must) i\b|"
    r"steps? (?:to|for)\b|walk me through)"
    r"|\b(?:error|errors|fails?|failed|failing|won't|can't find|cannot find|not found|"
    r"no module named|permission denied|crash(?:es|ed)?|doesn't work|does not work|"
    r"refuses? to|set ?up|install(?:ing)?|configure|troubleshoot|fix it|how do i fix|"
    r"what should i (?:check|do|try)|what's wrong|what is wrong|what did i miss|"
    r"how (?:can|do) i)\b",
    re.IGNORECASE)
CONCEPTUAL_RE = re.compile(
    r"^\W*(?:why\b|explain\b|how (?:does|do|can|is|are|would)\b|what (?:makes|goes wrong|"
    r"happens|is the (?:idea|point|purpose|role|reason|intuition))\b|in what sense\b)",
    re.IGNORECASE)


def classify(question: str) -> str:
    """The rule-based type of a question; "factual" when no rule fires."""
    text = " ".join(str(question).split())
    if asks_realtime(text):
        return "realtime"
    if asks_for_code(text):
        return "code"
    if COMPARISON_RE.search(text):
        return "comparison"
    if PROCEDURAL_RE.search(text):
        return "procedural"
    if CONCEPTUAL_RE.search(text):
        return "conceptual"
    return "factual"


def type_of_category(category: str | None) -> str | None:
    """The query type a labelled set's category names, or None (e.g. off_topic, other)."""
    name = (category or "").strip().lower()
    name = CATEGORY_TYPES.get(name, name)
    return name if name in QUERY_TYPES else None


CLASSIFY_SYSTEM = (
    "Classify the reader's question about a book into exactly one type: factual (a fact, name, "
    "number or definition), conceptual (why or how something works), comparison (two or more "
    "things weighed against each other), procedural (how to do, set up or fix something), code "
    "(asks for code to be written) or realtime (about the present moment: news, prices, live "
    "counts). Reply with the type's one word only.")


def classify_with_llm(question: str, llm: LLM | None, timeout: float = 1.0) -> tuple[str, str]:
    """(type, source): Claude's one-word answer when configured and valid, else the rules.
    Source is "llm" or "rules"; a failure or an answer that is not a type uses the rules."""
    if llm is not None:
        try:
            reply = llm.generate(CLASSIFY_SYSTEM, [Message("user", question[:2000])], 5,
                                 timeout).strip().lower()
            word = re.sub(r"[^a-z-]", "", reply.split()[0]) if reply.split() else ""
            word = CATEGORY_TYPES.get(word, word)
            if word in QUERY_TYPES:
                return word, "llm"
        except RagError:
            pass  # the rules below answer instead
    return classify(question), "rules"
