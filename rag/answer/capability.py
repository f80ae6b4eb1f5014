"""The capability boundary (SPEC §4): requests no book can serve whatever it contains, refused
as far as the book's settings disallow them ([guardrails] disallowed_capabilities,
rag.config.capabilities): writing new code, what is happening now, what will happen.

Requests are judged by form, not topic. A book about a library answers "How do I declare a path
parameter?", "How do I derive Debug?" or "What does this code do?" with its own code, so a
question asking how, what or where is about the book whatever words it uses, and the content
guardrail decides whether the book covers it. What is refused is a request addressed to Folio
to produce code ("Write me code for PID control", "Write a function that ...", "Give me a
script to ...", "Implement X for me", "Can you write a class ..."), or to carry an answer over
to another language ("How would I do this in Rust?"). Someone else writing code is no request
("I'd like users of my library to write #[derive(Describe)] ... How?"), and neither is a
language named in a question ("How do I make that work in Rust?").
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from rag.answer.wording import SENTENCE_END_RE
from rag.config.capabilities import CODE, DEFAULT_DISALLOWED, PREDICTIONS, REALTIME
from rag.types import Chunk, Hit, Verdict

CAPABILITY_CODE = "capability_code"
CAPABILITY_REALTIME = "capability_realtime"
CAPABILITY_PREDICTION = "capability_prediction"

_LANGUAGES = (r"python|c\+\+|c#|rust|java|javascript|typescript|matlab|julia|golang|kotlin|swift|"
              r"ruby|php")
# what opens a request addressed to Folio; "show me how ..." asks how, as a question does
_REQUEST_START = (r"^\W*+(?:please\s+|(?:can|could|would|will) you\s+(?:please\s+)?|"
                  r"i (?:need|want|would like|'d like) you to\s+|help me\s+)?")
_MAKE = r"(?:write|implement|generate|create|build|code up|give me|show me(?! how)|produce|provide)"
_ARTEFACTS = r"code|source code|pseudo-?code|scripts?|snippets?|programs?"
# things made of code that a book may well show its own of ("Show me the implementation of
# softmax", "the JSON it returns"): a request only for a new one ("Give me a JAX implementation
# of ...", "Give me a Kubernetes deployment YAML", "Write an nginx configuration ...")
_MADE = (r"implementations?|fixtures?|config(?:uration)?s?|manifests?|dockerfiles?|"
         r"sketch(?:es)?|dashboards?|yaml|json|sql|xml|html|css")
_SOFTWARE = (r"functions?|class(?:es)?|methods?|modules?|library|implementation|package|api|"
             r"files?|components?|kernels?|endpoints?|nodes?|services?|servers?|clients?|"
             r"plugins?|widgets?|tests?")
QUESTION_RE = re.compile(r"^\W*(?:how|what|what's|which|where|why|when|who)\b", re.IGNORECASE)
CODE_REQUEST_RE = re.compile(
    # a request that opens with a creation verb + an unmistakable code artefact or a language
    rf"{_REQUEST_START}{_MAKE}\b[^.?!]{{0,60}}?\b(?:{_ARTEFACTS}|{_LANGUAGES})(?!\w)"
    # ... with a writing verb + a software noun ("Create a class that ...")
    rf"|{_REQUEST_START}(?:write|implement|generate|create|code)\b[^.?!]{{0,60}}?\b"
    rf"(?:{_SOFTWARE})\b"
    # "Implement X for me", "Code up a Kalman filter"
    rf"|{_REQUEST_START}(?:implement|code up|code)\b"
    # "Write an nginx configuration ...", "Give me a JAX implementation of ..."
    rf"|{_REQUEST_START}(?:write|implement|generate|create|code)\b[^.?!]{{0,60}}?\b(?:{_MADE})\b"
    rf"|{_REQUEST_START}(?:give|get|produce|provide)\s+(?:me|us)\s+(?:a|an|some)\b"
    rf"[^.?!]{{0,50}}?\b(?:{_MADE})\b"
    # "Write me a complete ... app", "Generate a working ..."
    rf"|{_REQUEST_START}(?:write|generate|create|code)\b[^.?!]{{0,12}}?\b"
    rf"(?:complete|full|working|whole|entire)\b"
    # "I need a script that ...", "I want some code to ..."
    rf"|^\W*+i (?:need|want|would like|'d like) (?:a|an|some|the)\b[^.?!]{{0,40}}?\b"
    rf"(?:{_ARTEFACTS}|functions?|class)\b\s+(?:that|which|to|for)\b",
    re.IGNORECASE)
# the answer before carried over to another language: "How would I do this in Rust?"
# ("How do I make that work in Rust?" asks how, in the language the book may well be about)
CARRY_OVER_RE = re.compile(
    r"\b(?:do|write|implement|port|translate|convert|rewrite)\s+(?:this|that|it|these|those)"
    rf"\s+(?:in|into|to)\s+(?:{_LANGUAGES})(?!\w)", re.IGNORECASE)
_CLAUSE_END = r"\s*(?:[?.!,;]|$)"
REALTIME_RE = re.compile(
    r"\b(right now|as of (?:now|today)|currently available|yesterday|tomorrow|"
    r"tonight|today's|this (?:week|month|year|morning|afternoon|evening|semester|quarter)|"
    r"who(?:'s| is| will be) (?:teaching|lecturing|grading)|"
    # "last week" is past, "the last week of the course" is the book's
    r"(?<!the )(?:last|next) (?:week|month|year)(?! of)|(?:stock|share) prices?|"
    r"(?:current|latest|today's) (?:prices?|valuation|market|events?|ceo|weather|stock|"
    r"rankings?|standings)|latest (?:version|release|edition|firmware|models?|results?|figures)|"
    # a ranking or a release as it stands now
    r"(?:currently|nowadays|these days|at present) (?:tops?|leads?|ranks? first|holds? the "
    r"record|is the (?:best|leading|top|fastest|largest|most \w+))|"
    r"(?:released|out|available|launched|shipped) yet|"
    r"next (?:edition|version|release)\b[^.?!]{0,30}\b(?:come out|be released|be out)|"
    r"(?:latest|recent|breaking|current)\s+(?:\w+\s+){0,2}?news|in the news|"
    r"weather (?:forecast|like|today|tomorrow|in|for)|"
    # news of the day: "patches announced today", "a release published this morning"
    r"(?:announced|released|published|posted|reported|launched) "
    r"(?:today|this morning))\b",
    re.IGNORECASE)
PREDICTION_RE = re.compile(r"\b(?:will|going to)\b[^.?!]{0,40}\b(?:in|by) 20\d\d\b",
                           re.IGNORECASE)
# "today" or "at the moment" closing a clause asks about the present ("Which robots are for sale
# today?") unless the question asks what the book itself says ("Which robots are given as
# examples of where the field stands today?", "What does the book say about it today?").
PRESENT_RE = re.compile(rf"\b(today|at the moment){_CLAUSE_END}", re.IGNORECASE)
BOOK_REFERENCE_RE = re.compile(
    r"\b(?:given|mentioned|named|listed|described|cited|shown|used) as (?:an? )?examples?\b|"
    r"\b(?:the|this) (?:book|course|chapter|section|text|author|guide|tutorial|documentation|"
    r"docs)\b|\baccording to\b", re.IGNORECASE)

NO_CODE = ("I can explain concepts from the book but cannot write code or provide "
           "implementation details.")
CODE_SECTIONS = " The book's own code examples are in: {names}."
NO_CODE_SECTIONS = " The book itself has no code examples."
NO_REALTIME = ("I only have information from {book} as of {date}. I cannot provide real-time or "
               "current information.")
NO_PREDICTION = ("I only have information from {book} as of {date}. I cannot predict what will "
                 "happen.")


def asks_realtime(question: str) -> bool:
    """Does the question ask about what is happening now, which no book can answer?"""
    return bool(REALTIME_RE.search(question) or (
        PRESENT_RE.search(question) and not BOOK_REFERENCE_RE.search(question)))


def asks_for_code(text: str) -> bool:
    """A sentence that asks Folio for new code (CODE_REQUEST_RE), or for the answer in another
    language (CARRY_OVER_RE). Sentences that lead up to a question tell what happened
    ("colcon refuses to build my Python package ... Where is that file supposed to be?"):
    they ask for code only as a request ("I have a lidar. Write a Python node that reads it.
    How do I run it?")."""
    sentences = SENTENCE_END_RE.split(text.strip())
    return bool(CARRY_OVER_RE.search(text)) or any(
        not QUESTION_RE.match(s) and CODE_REQUEST_RE.match(s) for s in sentences)


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


def check_capability(question: str, book: str, as_of: str,
                     candidates: Sequence[Hit] = (), chunks: Iterable[Chunk] | None = None,
                     asked: str = "", disallowed: Collection[str] = DEFAULT_DISALLOWED
                     ) -> Verdict | None:
    """Requests the book cannot serve whatever it contains, of the kinds `disallowed` names
    (rag.config.capabilities): code, real-time data, predictions. `asked`: the question
    without its words about the book (rag.answer.wording), which opens on the request itself
    ("According to the book, write me a node ..." -> "Write me a node ..."), and "According to
    the book, what does a D435i cost on Amazon today?" asks about today as much as without
    those words; "What does the book say the field can do today?" does not.

    With the book's chunks given, a code request is pointed to the book's own code sections,
    those nearest the question (its ranked `candidates`) first, or told the book has none."""
    asked = asked or question
    if CODE in disallowed and any(asks_for_code(text) for text in {question, asked}):
        message = NO_CODE
        if chunks is not None:
            names = code_sections(candidates, chunks)
            message += CODE_SECTIONS.format(names="; ".join(names)) if names else \
                NO_CODE_SECTIONS
        return Verdict("capability", CAPABILITY_CODE, "override", message)
    if REALTIME in disallowed and asks_realtime(asked):
        return Verdict("capability", CAPABILITY_REALTIME, "override",
                       NO_REALTIME.format(book=book, date=as_of))
    if PREDICTIONS in disallowed and PREDICTION_RE.search(asked):
        return Verdict("capability", CAPABILITY_PREDICTION, "override",
                       NO_PREDICTION.format(book=book, date=as_of))
    return None
