"""Guardrails as pure functions returning verdicts with reason codes; none of them raises."""

from __future__ import annotations

import re
from collections.abc import Container, Iterable, Sequence

import re2

from rag.answer.shape import UNIT
from rag.answer.spelling import american, english, is_english
from rag.answer.wording import SENTENCE_END_RE
from rag.index.lexical import tokenize
from rag.types import Chunk, Hit, Verdict

CAPABILITY_CODE = "capability_code"
CAPABILITY_REALTIME = "capability_realtime"
CONTENT_NOT_COVERED = "content_not_covered"
CONTENT_OFF_TOPIC = "content_off_topic"
CONFIDENCE_HEDGE = "confidence_hedge"
CONFIDENCE_LOW = "confidence_low"
CITATION_MISSING = "citation_missing"
CITATION_UNCITED_SENTENCES = "citation_uncited_sentences"
CITATION_UNRESOLVED = "citation_unresolved"
CITATION_UNSUPPORTED = "citation_unsupported"
REASON_CODES = (CAPABILITY_CODE, CAPABILITY_REALTIME, CONTENT_NOT_COVERED, CONTENT_OFF_TOPIC,
                CONFIDENCE_HEDGE, CONFIDENCE_LOW, CITATION_MISSING, CITATION_UNCITED_SENTENCES,
                CITATION_UNRESOLVED, CITATION_UNSUPPORTED)
REASON_LABELS = {  # how a reader is told what a reason code means
    CAPABILITY_CODE: "asks for code", CAPABILITY_REALTIME: "asks for current information",
    CONTENT_NOT_COVERED: "not covered by the book", CONTENT_OFF_TOPIC: "off-topic",
    CONFIDENCE_HEDGE: "hedged wording", CONFIDENCE_LOW: "low confidence",
    CITATION_MISSING: "no citation", CITATION_UNCITED_SENTENCES: "uncited sentences",
    CITATION_UNRESOLVED: "unknown citation marker",
    CITATION_UNSUPPORTED: "claim not supported by its source"}


def reason_label(code: str) -> str:
    """A reason code in words ("confidence_low" -> "low confidence"); unknown codes readable."""
    return REASON_LABELS.get(code, code.replace("_", " "))

# Capability requests are judged by form, not topic: the book explains PID loops, so "How is the
# loop implemented?" is a question about the book, while "Write a PID class" asks for code. Words
# with an in-domain meaning (function, class, module, current, today, weather, "at the moment of")
# only count in request form; "nowadays" asks about the present era, which the book covers.
_LANGUAGES = r"python|c\+\+|rust|java|javascript|typescript|matlab|julia|golang"
_REQUEST_START = (r"^\W*(?:please\s+|(?:can|could|would|will) you\s+(?:please\s+)?|"
                  r"i (?:need|want) you to\s+|help me\s+)?")
_MAKE = r"\b(write|implement|generate|create|build|code up|give me|show me|produce|provide)\b"
_ARTEFACTS = r"code|source code|pseudo-?code|scripts?|snippets?|programs?"
# A question that asks how, what or where is about the book ("How do I create a ROS 2 package in
# Python?", "How do I run a node written in Python?": the book shows how) unless it asks for code
# itself ("How do I write a script that ...?").
QUESTION_RE = re.compile(r"^\W*(?:how|what|what's|which|where|why|when|who)\b", re.IGNORECASE)
REQUEST_FORM_RE = re.compile(_REQUEST_START + _MAKE, re.IGNORECASE)  # "Please write ...", "Give me"
CODE_ARTEFACT_RE = re.compile(
    rf"{_MAKE}[^.?!]{{0,60}}?\b({_ARTEFACTS})\b"
    # the answer before it carried over to another language: "How would I do this in Rust?"
    rf"|\b(?:do|write|implement|make|port|translate|convert|rewrite)\s+(?:this|that|it|these|"
    rf"those)\b[^.?!]{{0,30}}?\b(?:in|into|to)\s+(?:{_LANGUAGES})\b", re.IGNORECASE)
CODE_REQUEST_RE = re.compile(
    # any creation verb + an unmistakable code artefact
    rf"{_MAKE}[^.?!]{{0,60}}?\b({_ARTEFACTS}|(?:{_LANGUAGES})\b)"
    # a request that opens with a writing verb + a software noun
    rf"|{_REQUEST_START}(write|implement|generate|create|code)\b[^.?!]{{0,60}}?"
    r"\b(functions?|class(?:es)?|methods?|modules?|library|implementation|node|package|api|"
    r"files?)\b"
    # "implement ..." / "code ..." as the request itself, or anything asked for in a language
    rf"|{_REQUEST_START}(implement|code up|code)\b|\bin ({_LANGUAGES})\b",
    re.IGNORECASE)
_CLAUSE_END = r"\s*(?:[?.!,;]|$)"
REALTIME_RE = re.compile(
    r"\b(right now|as of (?:now|today)|currently available|yesterday|tomorrow|"
    r"tonight|today's|this (?:week|month|year|morning|afternoon|evening|semester|quarter)|"
    r"who(?:'s| is| will be) (?:teaching|lecturing|grading)|"
    r"(?:last|next) (?:week|month|year)|(?:stock|share) prices?|"
    r"(?:current|latest|today's) (?:prices?|valuation|market|events?|ceo|weather|stock|"
    r"rankings?|standings)|latest (?:version|release|firmware|models?|results?|figures)|"
    r"(?:latest|recent|breaking|current)\s+(?:\w+\s+){0,2}?news|in the news|"
    r"weather (?:forecast|like|today|tomorrow|in|for)|"
    r"(?:will|going to)\b[^.?!]{0,40}\b(?:in|by) 20\d\d|"
    # news of the day: "patches announced today", "a release published this morning"
    r"(?:announced|released|published|posted|reported|launched) "
    r"(?:today|this morning))\b",
    re.IGNORECASE)
# "today" or "at the moment" closing a clause asks about the present ("Which robots are for sale
# today?") unless the question asks what the book itself says ("Which robots are given as
# examples of where the field stands today?", "What does the book say about it today?").
PRESENT_RE = re.compile(rf"\b(today|at the moment){_CLAUSE_END}", re.IGNORECASE)
BOOK_REFERENCE_RE = re.compile(
    r"\b(?:given|mentioned|named|listed|described|cited|shown|used) as (?:an? )?examples?\b|"
    r"\b(?:the|this) (?:book|course|chapter|text|author|module|lesson)\b|\baccording to\b",
    re.IGNORECASE)


def asks_realtime(question: str) -> bool:
    """Does the question ask about what is happening now, which no book can answer?"""
    return bool(REALTIME_RE.search(question) or (
        PRESENT_RE.search(question) and not BOOK_REFERENCE_RE.search(question)))


NOT_COVERED = ("I can only answer questions based on {book}. This topic isn't covered in the "
               "available material.")
NOT_STATED = ("I can only answer questions based on {book}. The passages closest to this question "
              "give no {values}.")
NO_CODE = ("I can explain concepts from the book but cannot write code or provide "
           "implementation details.")
CODE_SECTIONS = " The book's own code examples are in: {names}."
NO_CODE_SECTIONS = " The book itself has no code examples."
NO_REALTIME = ("I only have information from {book} as of {date}. I cannot provide real-time or "
               "current information.")
NOT_ENOUGH = ("I don't have enough information in the book to answer that question. Try "
              "rephrasing or asking about a different topic.")
SPECULATIVE = "Note: This answer may be speculative."
LOW_CONFIDENCE = "Note: the book only partly covers this; check the cited sections."


def code_sections(candidates: Iterable[Hit], chunks: Iterable[Chunk], limit: int = 3
                  ) -> list[str]:
    """The book's sections that contain code ("Chapter › Section"): those retrieval ranked for
    the question first, in its order, then the rest in book order; at most `limit`."""
    names: dict[str, str] = {}
    for c in chunks:
        if c.has_code and c.source == "book":
            title = c.section_title or c.chapter_title
            names.setdefault(c.section_key, f"{c.chapter_title} › {title}")
    ranked = [h.chunk.section_key for h in candidates if h.chunk.section_key in names]
    return [names[k] for k in dict.fromkeys([*ranked, *names])][:limit]


def asks_for_code(text: str) -> bool:
    """A request for code (CODE_REQUEST_RE); a question asking how, what or where only when it
    asks for code itself (CODE_ARTEFACT_RE). Sentences that lead up to such a question tell
    what happened ("colcon refuses to build my Python package and says it can't find
    setup.py. Where is that file supposed to be?"): they ask for code only as a request ("Write
    a Python node ...")."""
    *before, last = SENTENCE_END_RE.split(text.strip())
    if before and QUESTION_RE.match(last):
        return bool(CODE_ARTEFACT_RE.search(last)) or any(
            REQUEST_FORM_RE.match(s) and CODE_REQUEST_RE.search(s) for s in before)
    pattern = CODE_ARTEFACT_RE if QUESTION_RE.match(text) else CODE_REQUEST_RE
    return bool(pattern.search(text))


def check_capability(question: str, book: str, as_of: str,
                     candidates: Sequence[Hit] = (), chunks: Iterable[Chunk] | None = None,
                     asked: str = "") -> Verdict | None:
    """Requests the book cannot serve whatever it contains: code, real-time data, predictions.
    `asked`: the question without its words about the book (rag.answer.wording), which opens
    on the request itself ("According to the book, write me a node ..." -> "Write me a node
    ..."), and "According to the book, what does a D435i cost on Amazon today?" asks about today
    as much as without those words; "What does the book say the field can do today?" does not.

    With the book's chunks given, a code request is pointed to the book's own code sections,
    those nearest the question (its ranked `candidates`) first, or told the book has none."""
    asked = asked or question
    if any(asks_for_code(text) for text in {question, asked}):
        message = NO_CODE
        if chunks is not None:
            names = code_sections(candidates, chunks)
            message += CODE_SECTIONS.format(names="; ".join(names)) if names else \
                NO_CODE_SECTIONS
        return Verdict("capability", CAPABILITY_CODE, "override", message)
    if asks_realtime(asked):
        return Verdict("capability", CAPABILITY_REALTIME, "override",
                       NO_REALTIME.format(book=book, date=as_of))
    return None


# A name in a question: a capitalised word (not one opening a sentence), an acronym, CamelCase, or
# letters with digits ("UR5", "VLP-16", "SolidWorks", "Cyclone"). Quoted text, code spans and
# identifiers (snake_case, paths, file names) are the reader's own and are not looked up.
# google-re2: an unclosed quote does not send every later quote to the end of the text
QUOTED_RE = re2.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|“[^”]*”|‘[^’]*’")
HEX_RE = re.compile(r"[0-9a-f]{4,}")  # "4d7235", "40b7b3cc": an id or a hash, not a name
NAME_RE = re.compile(r"(?<![\w./-])(?:(?P<cap>[A-Z][a-z]+)|(?=[a-z]*[A-Z])[A-Za-z]*+\d[\w-]*|"
                     r"\d+[A-Za-z][\w-]*|[A-Z][a-z]*[A-Z][\w-]*|[A-Z]{2,}[\w-]*)(?![\w./])")


# In a question written all in lower case, a word that is neither English nor the book's is a
# name ("how do i export a solidworks assembly to urdf?"): 2 of 5 false answers of the
# development sets' out-of-scope questions written so ("cyclone" is English, so "cyclone dds"
# still passes). Since 2026-11-28 in every question: "How do I set up a Nav2 keepout zone so my
# robot never drives into the kitchen?" (physical-ai-oos2.yaml) had been answered; no right
# development answer is lost, and in lower case British spellings ("behaviour", "recognise")
# stopped being taken for names (right answers 292 -> 295 of 444, bench/phrasing.py).
LOWER_NAME_RE = re.compile(r"(?<![\w./'-])[a-z][a-z0-9]{3,}(?:-[a-z0-9]+)*(?![\w./'-])")


# in a question written all in lower case, a model number ("d435i", "g1", "vlp-16"): with them,
# development out-of-scope questions written so and answered 11 -> 6 of 143 (bench/phrasing.py)
LOWER_MODEL_RE = re.compile(r"(?<![\w./'-])(?=[a-z0-9-]*[a-z])(?=[a-z0-9-]*\d)[a-z0-9]+"
                            r"(?:-[a-z0-9]+)*(?![\w./'-])")


def question_names(question: str, lower_case: bool = False) -> list[str]:
    """The names a question uses (NAME_RE), in its order: not a capital opening a sentence,
    nor the reader's identifier, hash or unit, nor anything quoted; and a lower-case word that
    is not English, in British spelling either (LOWER_NAME_RE: "keepout", not "behaviour" nor
    "trade-offs"). When the reader wrote no capitals (`lower_case`), a model number counts as
    well ("what is the field of view of the realsense d435i?")."""
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
             if not all(map(is_english, m.group(0).split("-")))] if english() else []
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
    switch it to Cyclone DDS?"). A lower-case word that is neither English
    (rag.answer.spelling.is_english) nor the book's counts as a name ("How do I set up a Nav2
    keepout zone ...?"), and so does a model number ("vlp-16") when the reader wrote the question
    without capitals (`lower_case`)."""
    return [name for name in question_names(question, lower_case)
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
