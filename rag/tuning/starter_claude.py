"""Starter questions phrased by Claude: the sentences of the book that carry a fact (a number with
its unit, an acronym spelt out, a definition), spread over its chapters, go out in one request;
Claude answers with a JSON list of {id, question, key_fact, category}. What comes back is only a
proposal: rag.tuning.starter checks every item as it checks its own (the key fact must be in the
sentence, the question must read as one), and a failed call or an unreadable reply is a
ProviderError, after which the offline templates make the set.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rag.errors import ProviderError
from rag.providers.base import LLM, Message
from rag.tuning.starter import Candidate, Phraser, Sentence
from rag.tuning.starter_rules import DEFINITION, NUMERIC, QUANTITY_RE, phrase_offline

CATEGORIES = (DEFINITION, NUMERIC, "factual")
MAX_SENTENCES = 120  # one request: about 6,000 input tokens
MAX_TOKENS = 8000
TIMEOUT_S = 90.0
FACT_CUE_RE = re.compile(r"\b(?:is|are) (?:a|an|the) |\([A-Z][A-Za-z0-9]{1,7}\)|, or [A-Z]{2,}")
SYSTEM = (
    "You write test questions for a question-answering system that answers only from one book. "
    "For each numbered sentence from the book, write the question a reader of the book would "
    "naturally ask whose answer is that sentence's fact, and give the key fact: a short phrase "
    "(a number with its unit, a name or a term, at most six words) copied exactly, character "
    "for character, from the sentence, that a correct answer must contain. The question must "
    "not contain the key fact, must make sense without the sentence (name what it is about), "
    "and must end with a question mark. Skip a sentence that holds no fact worth asking about. "
    "Reply with only a JSON list, no prose: "
    '[{"id": 1, "question": "...", "key_fact": "...", "category": "definition|numeric|factual"}]')


def fact_sentences(sentences: Sequence[Sentence], limit: int) -> list[Sentence]:
    """Sentences with a fact cue, chapters in book order taking turns, at most `limit`."""
    by_chapter: dict[str, list[Sentence]] = defaultdict(list)
    for s in sentences:
        if s.kind in ("prose", "item", "row") and (
                QUANTITY_RE.search(s.text) or FACT_CUE_RE.search(s.text)
                or phrase_offline(s.text, s.kind, s.title, set())):
            by_chapter[s.chapter].append(s)
    chosen: list[Sentence] = []
    queues = list(by_chapter.values())
    for turn in range(max((len(q) for q in queues), default=0)):
        chosen += [q[turn] for q in queues if turn < len(q)]
    return chosen[:limit]


def prompt_for(chosen: Sequence[Sentence]) -> str:
    lines = [f'{n}. (section "{s.title}") {s.text}' for n, s in enumerate(chosen, start=1)]
    return "Sentences from the book:\n\n" + "\n".join(lines)


def parse_reply(reply: str) -> list[dict[str, Any]]:
    """The JSON list in Claude's reply (a code fence or a sentence around it is tolerated)."""
    start, end = reply.find("["), reply.rfind("]")
    try:
        items = json.loads(reply[start:end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        items = None
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ProviderError("Claude's reply was not the JSON list of questions asked for.")
    return items


def candidates_from(items: list[dict[str, Any]], chosen: Sequence[Sentence]) -> list[Candidate]:
    """Items naming a sentence, with text fields; the checks in starter.select come after."""
    out = []
    for item in items:
        number, question, fact = item.get("id"), item.get("question"), item.get("key_fact")
        if not (isinstance(number, int) and 1 <= number <= len(chosen)
                and isinstance(question, str) and isinstance(fact, str)):
            continue
        s = chosen[number - 1]
        category = item.get("category") if item.get("category") in CATEGORIES else "factual"
        out.append(Candidate(" ".join(question.split()), " ".join(fact.split()), category,
                             (s.section,), s.text, s.chapter, 0))
    return out


def claude_phraser(llm: LLM, limit: int = MAX_SENTENCES, timeout: float = TIMEOUT_S) -> Phraser:
    """A phraser for starter.generate_starter that asks `llm` (AnthropicLLM) once, about at most
    MAX_SENTENCES sentences."""
    limit = min(limit, MAX_SENTENCES)

    def phrase(sentences: list[Sentence]) -> list[Candidate]:
        chosen = fact_sentences(sentences, limit)
        if not chosen:
            return []
        reply = llm.generate(SYSTEM, [Message("user", prompt_for(chosen))], MAX_TOKENS, timeout)
        return candidates_from(parse_reply(reply), chosen)

    return phrase
