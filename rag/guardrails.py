"""Guardrails as pure functions returning verdicts with reason codes; none of them raises."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rag.types import Verdict

CAPABILITY_CODE = "capability_code"
CAPABILITY_REALTIME = "capability_realtime"
CONTENT_NOT_COVERED = "content_not_covered"
CONTENT_OFF_TOPIC = "content_off_topic"
CONFIDENCE_HEDGE = "confidence_hedge"
CONFIDENCE_LOW = "confidence_low"
CITATION_MISSING = "citation_missing"
CITATION_UNCITED_SENTENCES = "citation_uncited_sentences"
CITATION_UNRESOLVED = "citation_unresolved"
REASON_CODES = (CAPABILITY_CODE, CAPABILITY_REALTIME, CONTENT_NOT_COVERED, CONTENT_OFF_TOPIC,
                CONFIDENCE_HEDGE, CONFIDENCE_LOW, CITATION_MISSING, CITATION_UNCITED_SENTENCES,
                CITATION_UNRESOLVED)
REFUSAL_CODES = (CAPABILITY_CODE, CAPABILITY_REALTIME, CONTENT_NOT_COVERED, CONTENT_OFF_TOPIC,
                 CITATION_MISSING)

CODE_REQUEST_RE = re.compile(
    r"\b(write|implement|generate|create|build|code up|give me|show me|produce)\b[^.?!]{0,60}?"
    r"\b(code|function|script|program|class|node|snippet|implementation|module|library|"
    r"algorithm in|in (python|c\+\+|rust|java|matlab))\b"
    r"|^\s*(implement|code)\b", re.IGNORECASE)
REALTIME_RE = re.compile(
    r"\b(today|tonight|right now|at the moment|as of now|this (week|month|year)|yesterday|"
    r"tomorrow|latest (news|version|release|price|prices|model|models|results?)|"
    r"current (price|prices|news|status|events?|weather|stock|valuation|ceo)|stock price|"
    r"breaking news|news|weather|share price|(will|going to) .{0,40}\bin 20\d\d)\b",
    re.IGNORECASE)

NOT_COVERED = ("I can only answer questions based on {book}. This topic isn't covered in the "
               "available material.")
NO_CODE = ("I can explain concepts from the book but cannot write code or provide "
           "implementation details.")
NO_REALTIME = ("I only have information from {book} as of {date}. I cannot provide real-time or "
               "current information.")
NOT_ENOUGH = ("I don't have enough information in the book to answer that question. Try "
              "rephrasing or asking about a different topic.")
SPECULATIVE = "Note: This answer may be speculative."
LOW_CONFIDENCE = "Note: the book only partly covers this; check the cited sections."


def check_capability(question: str, book: str, as_of: str) -> Verdict | None:
    """Requests the book cannot serve whatever it contains: code, real-time data, predictions."""
    if CODE_REQUEST_RE.search(question):
        return Verdict("capability", CAPABILITY_CODE, "override", NO_CODE)
    if REALTIME_RE.search(question):
        return Verdict("capability", CAPABILITY_REALTIME, "override",
                       NO_REALTIME.format(book=book, date=as_of))
    return None


def check_content(best_score: float, threshold: float, question: str, book: str,
                  nearest: Iterable[str] = (), off_topic: Iterable[str] = ()) -> Verdict | None:
    """Nothing relevant above the threshold, or a configured off-topic keyword."""
    lowered = question.lower()
    hit = next((k for k in off_topic if re.search(rf"\b{re.escape(k.lower())}\b", lowered)), None)
    if hit:
        return Verdict("content", CONTENT_OFF_TOPIC, "override",
                       NOT_COVERED.format(book=book) + f" (off-topic: {hit})")
    if best_score >= threshold:
        return None
    message = NOT_COVERED.format(book=book)
    names = list(nearest)
    if names:
        message += " The nearest sections are: " + "; ".join(names) + "."
    return Verdict("content", CONTENT_NOT_COVERED, "override", message)


def check_hedges(answer: str, hedge_words: Iterable[str]) -> Verdict | None:
    lowered = answer.lower()
    found = [w for w in hedge_words if re.search(rf"\b{re.escape(w.lower())}\b", lowered)]
    if not found:
        return None
    return Verdict("confidence", CONFIDENCE_HEDGE, "warn",
                   f"{SPECULATIVE} (hedging: {', '.join(found)})")


def check_citations(cited: int, uncited_sentences: int, unresolved: int, mode: str
                    ) -> list[Verdict]:
    """No valid marker overrides; uncited sentences override in strict mode, else warn."""
    verdicts = []
    if unresolved:
        verdicts.append(Verdict("citation", CITATION_UNRESOLVED, "flag",
                                f"{unresolved} citation marker(s) named no retrieved excerpt "
                                "and were removed."))
    if cited == 0:
        verdicts.append(Verdict("citation", CITATION_MISSING, "override", NOT_ENOUGH))
    elif uncited_sentences:
        action = "override" if mode == "strict" else "warn"
        message = NOT_ENOUGH if action == "override" else (
            f"{uncited_sentences} sentence(s) carry no citation; treat them with care.")
        verdicts.append(Verdict("citation", CITATION_UNCITED_SENTENCES, action, message))
    return verdicts
