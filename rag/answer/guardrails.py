"""Guardrails as pure functions returning verdicts with reason codes; none of them raises."""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence

import re2

from rag.answer.capability import (  # noqa: F401  (the capability boundary, named here too)
    CAPABILITY_CODE,
    CAPABILITY_PREDICTION,
    CAPABILITY_REALTIME,
    NO_CODE,
    NO_PREDICTION,
    NO_REALTIME,
    asks_for_code,
    asks_realtime,
    check_capability,
    code_sections,
)
from rag.answer.shape import UNIT
from rag.answer.spelling import american, english, is_english
from rag.index.lexical import tokenize
from rag.types import Verdict

CONTENT_NOT_COVERED = "content_not_covered"
CONTENT_OFF_TOPIC = "content_off_topic"
CONFIDENCE_HEDGE = "confidence_hedge"
CONFIDENCE_LOW = "confidence_low"
CITATION_MISSING = "citation_missing"
CITATION_UNCITED_SENTENCES = "citation_uncited_sentences"
CITATION_UNRESOLVED = "citation_unresolved"
CITATION_UNSUPPORTED = "citation_unsupported"
REASON_CODES = (CAPABILITY_CODE, CAPABILITY_REALTIME, CAPABILITY_PREDICTION, CONTENT_NOT_COVERED,
                CONTENT_OFF_TOPIC, CONFIDENCE_HEDGE, CONFIDENCE_LOW, CITATION_MISSING,
                CITATION_UNCITED_SENTENCES, CITATION_UNRESOLVED, CITATION_UNSUPPORTED)
REASON_LABELS = {  # how a reader is told what a reason code means
    CAPABILITY_CODE: "asks for code", CAPABILITY_REALTIME: "asks for current information",
    CAPABILITY_PREDICTION: "asks for a prediction",
    CONTENT_NOT_COVERED: "not covered by the book", CONTENT_OFF_TOPIC: "off-topic",
    CONFIDENCE_HEDGE: "hedged wording", CONFIDENCE_LOW: "low confidence",
    CITATION_MISSING: "no citation", CITATION_UNCITED_SENTENCES: "uncited sentences",
    CITATION_UNRESOLVED: "unknown citation marker",
    CITATION_UNSUPPORTED: "claim not supported by its source"}


def reason_label(code: str) -> str:
    """A reason code in words ("confidence_low" -> "low confidence"); unknown codes readable."""
    return REASON_LABELS.get(code, code.replace("_", " "))


NOT_COVERED = ("I can only answer questions based on {book}. This topic isn't covered in the "
               "available material.")
NOT_STATED = ("I can only answer questions based on {book}. The passages closest to this question "
              "give no {values}.")
NOT_ENOUGH = ("I don't have enough information in the book to answer that question. Try "
              "rephrasing or asking about a different topic.")
SPECULATIVE = "Note: This answer may be speculative."
LOW_CONFIDENCE = "Note: the book only partly covers this; check the cited sections."


# A name in a question: a capitalised word (not one opening a sentence), an acronym, CamelCase, or
# letters with digits ("UR5", "VLP-16", "SolidWorks", "Cyclone"). Quoted text, code spans and
# identifiers (snake_case, paths, file names) are the reader's own and are not looked up.
# google-re2: an unclosed quote does not send every later quote to the end of the text
QUOTED_RE = re2.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|“[^”]*”|‘[^’]*’")
HEX_RE = re.compile(r"[0-9a-f]{4,}")  # "4d7235", "40b7b3cc": an id or a hash, not a name
NAME_RE = re.compile(r"(?<![\w./-])(?:(?P<cap>[A-Z][a-z]+)|(?=[a-z]*[A-Z])[A-Za-z]*+\d[\w-]*|"
                     r"\d+[A-Za-z][\w-]*|[A-Z][a-z]*[A-Z][\w-]*|[A-Z]{2,}[\w-]*)(?![\w./])")


# A lower-case word that is neither English nor the book's ("keepout", "solidworks"). It is no
# name by its look: a book's reader uses ordinary words its dictionary lacks ("admin", "mock",
# "dedupe"), so the content guardrail does not look them up (unknown_names); what else reads
# question_names (rag.answer.quantity.rare_names) still counts them.
LOWER_NAME_RE = re.compile(r"(?<![\w./'-])[a-z][a-z0-9]{3,}(?:-[a-z0-9]+)*(?![\w./'-])")


# in a question written all in lower case, a model number ("d435i", "g1", "vlp-16"): with them,
# development out-of-scope questions written so and answered 11 -> 6 of 143 (bench/phrasing.py)
LOWER_MODEL_RE = re.compile(r"(?<![\w./'-])(?=[a-z0-9-]*[a-z])(?=[a-z0-9-]*\d)[a-z0-9]+"
                            r"(?:-[a-z0-9]+)*(?![\w./'-])")


def question_names(question: str, lower_case: bool = False, words: bool = True) -> list[str]:
    """The names a question uses (NAME_RE), in its order: not a capital opening a sentence,
    nor the reader's identifier, hash or unit, nor anything quoted; with `words`, a lower-case
    word that is not English, in British spelling either (LOWER_NAME_RE: "keepout", not
    "behaviour" nor "trade-offs"). When the reader wrote no capitals (`lower_case`), a model
    number counts as well ("what is the field of view of the realsense d435i?")."""
    text = QUOTED_RE.sub(" ", question)
    found = []
    for m in NAME_RE.finditer(text):
        opens = m.group("cap") and text[:m.start()].rstrip()[-1:] in ("", *".?!:;(")
        if "_" in m.group(0) or opens or re.fullmatch(UNIT, m.group(0), re.I) or \
                HEX_RE.fullmatch(m.group(0)):
            continue  # the reader's identifier or hash, a capital opening a sentence, a unit
        found.append((m.start(), m.group(0)))
    text = re.sub(r"'s\b", "  ", text)  # "the d435i's field of view": same positions
    # a word that is not English is a name, capitals or not ("a Nav2 keepout zone"), but for a
    # compound of English words ("trade-offs"); without a dictionary nothing can tell
    lower = [m for m in LOWER_NAME_RE.finditer(text)
             if not all(map(is_english, m.group(0).split("-")))] if words and english() else []
    if lower_case:
        lower += [m for m in LOWER_MODEL_RE.finditer(text)
                  if not re.fullmatch(UNIT, m.group(0), re.I)]
    found += [(m.start(), m.group(0)) for m in lower
              if not HEX_RE.fullmatch(m.group(0))]  # an id or a hash ("a6859e") is no name
    return list(dict.fromkeys(name for _, name in sorted(found)))


def unknown_names(question: str, known: Container[str], lower_case: bool = False) -> list[str]:
    """The names the question uses that the book never mentions (`known`: the stems of every
    word of the book, rag.index.lexical.book_vocabulary). On the labelled sets none of 328
    in-scope questions names such a thing (the held-out set's 30 included), while 35 of 101
    out-of-scope ones do ("Which DDS implementation does ROS 2 use by default, and how do I
    switch it to Cyclone DDS?"). Only what looks like a name counts: a capital inside a
    sentence, an acronym, CamelCase, letters with digits ("RTX4090", "GPT-4"), and a model
    number ("vlp-16") when the reader wrote the question without capitals (`lower_case`); never
    an ordinary lower-case word the dictionary lacks ("a mock that returns an admin user")."""
    return [name for name in question_names(question, lower_case, words=False)
            if all(any(t not in known and t.rstrip("s") not in known for t in tokenize(spelt))
                   for spelt in {name, american(name)})]  # "parameterised": "parameterized"


def check_content(best_score: float, threshold: float, question: str, book: str,
                  nearest: Iterable[str] = (), off_topic: Iterable[str] = (),
                  unknown: Sequence[str] = (), unstated: Sequence[str] = ()) -> Verdict | None:
    """A configured off-topic keyword, a name the book never mentions (`unknown`:
    unknown_names()), or nothing relevant above the threshold; `unstated`: the values the
    question asks for that the passages closest to it do not give (rag.answer.quantity)."""
    lowered = question.lower()
    hit = next((k for k in off_topic if re.search(rf"\b{re.escape(k.lower())}\b", lowered)), None)
    if hit:
        return Verdict("content", CONTENT_OFF_TOPIC, "override",
                       NOT_COVERED.format(book=book) + f" (off-topic: {hit})")
    if unknown:
        return Verdict("content", CONTENT_NOT_COVERED, "override",
                       NOT_COVERED.format(book=book) + " It never mentions " +
                       ", ".join(unknown) + ".")
    if best_score >= threshold:
        return None
    message = NOT_COVERED.format(book=book)
    if unstated:
        message = NOT_STATED.format(book=book, values=" and no ".join(unstated))
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
