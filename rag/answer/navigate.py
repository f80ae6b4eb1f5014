"""Questions about where the book treats a topic: "Which chapter covers URDF?", "Where does the
book talk about grasping?", "Is there a chapter on reinforcement learning?".

Read as ordinary questions they were refused or answered with a sentence about the topic
("Is there a chapter on reinforcement learning?" was refused, though a lesson is titled with
it): the words "which chapter covers" dilute the search, and no sentence of the book answers
"where". Such a question is searched by its topic alone (rag.answer.pipeline), and offline it is
answered by naming the sections retrieval found that treat the topic: first those whose heading
names it (the section is about it), then those whose text does (it is mentioned there), each
cited so the reader can open it. When no section found names the topic, the book does not treat
it and the question is refused like any other the book does not cover, with the nearest sections.
With Claude configured, Claude answers from the same sections.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from rag.answer.citations import book_section_names, place_name
from rag.answer.evidence import gather_sources
from rag.answer.extractive import EXTRACTIVE
from rag.answer.llm import NOT_COVERED_SENTENCE
from rag.index.lexical import tokenize
from rag.retrieval.parts import KINDS, parts_in, place_of
from rag.types import Draft, Hit

PLACE = (r"(?P<place>chapters?|sections?|lessons?|modules?|weeks?|parts? of (?:the|this) "
         r"(?:book|course)|pages?|places?)")
BOOK = r"(?:the|this) (?:book|text|course)"
TREATS = (r"(?:covers?|discuss(?:es)?|talks? about|explains?|deals? with|is about|are about|"
          r"describes?|introduces?|teach(?:es)?|mentions?|goes? (?:over|into)|treats?|"
          r"focus(?:es)? on|is devoted to|are devoted to)")
TREATED = (r"(?:covered|discussed|explained|described|introduced|mentioned|treated|taught|"
           r"defined|talked about|dealt with)")
WHERE_RES = tuple(re.compile(p, re.IGNORECASE) for p in (
    # "Which chapter covers X?", "What section of the book discusses X?"
    rf"^(?:which|what) {PLACE}(?: of {BOOK}| in {BOOK})? (?:(?:best|most|first|really) )?"
    rf"{TREATS} (?P<topic>.+)$",
    # "Where does the book talk about X?", "Where can I read about X?"
    rf"^where (?:in {BOOK} )?(?:does|do|did|can|could|should|would|will) (?:{BOOK}|the "
    rf"authors?|they|it|i|we|you|one) (?:(?:find|read|learn|look)(?: more)?(?: about| up| for| "
    rf"into)?|{TREATS}|get (?:information|more) (?:on|about)) (?P<topic>.+)$",
    # "Where is X covered?", "Where in the book are X discussed?"
    rf"^where (?:in {BOOK} )?(?:is|are) (?P<topic>.+?) (?:(?:first|best|really) )?{TREATED}"
    rf"(?: in {BOOK})?$",
    # "In which chapter is X explained?", "Which chapter is X in?"
    rf"^(?:in )?(?:which|what) {PLACE}(?: of {BOOK})? (?:is|are) (?P<topic>.+?) "
    rf"(?:(?:first|best) )?(?:{TREATED}(?: in)?|in)(?: in {BOOK})?$",
    # "Is there a chapter on X?", "Does the book have a section about X?"
    rf"^(?:is there|are there|does {BOOK} have|do you have) (?:a |an |any |one |some )?{PLACE} "
    rf"(?:on|about|covering|that covers|that discusses|dealing with|devoted to) (?P<topic>.+)$",
))
TOPIC_TAIL_RE = re.compile(rf"(?<!\s)\s++(?:in {BOOK}|in (?:more )?detail|at all|properly|first)$",
                           re.IGNORECASE)
MAX_PLACES = 3
CHAPTER, SECTION, MENTION = 3, 2, 1  # how a place treats the topic (treats())
# A section whose text names the topic is named among retrieval's first MENTION_DEPTH
# candidates, passing the threshold or not: a topic of one word ("VIO") scores low in meaning
# against whole sections, while its words in a section's text say the book treats it there.
MENTION_DEPTH = 10
# A term in more than this share of the book's units ("robot", "ROS", "2" in a robotics book)
# names no place: "robot ethics" is treated in "Ethics and Responsible Deployment".
COMMON_SHARE = 0.1
# The answer's confidence when a place it names is headed with the topic, and when only texts
# name it. bench/navigation.py, 2026-11-25, 38 in-scope questions of both books: the first kind
# cited a chapter the question expects for 35 of 36 answers (0.97: "high", over 0.8492); the
# second for 1 of 1, too few to earn "medium": 0.6 is "low", with the caveat that the book only
# partly covers the question (it only mentions the topic). All 12 out-of-scope topics refused.
NAVIGATION_CONFIDENCE = (0.9, 0.6)


def where_topic(question: str) -> str:
    """The topic of a question that asks where the book treats it ("" for any other):
    "Which chapter covers URDF?" -> "URDF". A topic that is itself a numbered part ("Which
    weeks is Module 3 taught in?") asks for that part's place in the course, not for sections
    (rag.retrieval.parts)."""
    m = where_match(question)
    if m is None:
        return ""
    topic = TOPIC_TAIL_RE.sub("", m.group("topic").strip(" \"'“”‘’"))
    topic = re.sub(r"^(?:the topic of|the subject of)\s+", "", topic, flags=re.I)
    return topic if tokenize(topic) and not parts_in(topic) else ""


def where_match(question: str) -> re.Match | None:
    text = " ".join(question.split()).rstrip(" ?.!")
    return next((m for p in WHERE_RES if (m := p.match(text))), None)


def asked_kind(question: str) -> str:
    """The numbered kind of place the question asks for ("Which week covers Gazebo?": "week"),
    or "" (rag.retrieval.parts.KINDS)."""
    m = where_match(question)
    place = (m.groupdict().get("place") or "").lower().rstrip("s") if m else ""
    return place if place in KINDS else ""


def treats(hit: Hit, terms: set[str]) -> int:
    """How a candidate treats the topic's terms: CHAPTER (its chapter's title names them all),
    SECTION (its heading path does), MENTION (its text does) or 0."""
    chunk = hit.chunk
    if terms <= set(tokenize(chunk.chapter_title)):
        return CHAPTER
    if terms <= set(tokenize(" ".join(chunk.heading_path))):
        return SECTION
    return MENTION if terms <= set(tokenize(chunk.text)) else 0


def numbered(chunk, kind: str, name: str) -> str:
    """" (Week 6)", " (Weeks 6–7)": the numbered part of `kind` a chunk sits in, when its name
    does not already say it; "" otherwise."""
    numbers = sorted(place_of(chunk).get(kind, ()))
    if not numbers or parts_in(name).get(kind):
        return ""
    label = kind.capitalize()
    if len(numbers) == 1:
        return f" ({label} {numbers[0]})"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f" ({label}s {numbers[0]}–{numbers[-1]})"
    return f" ({label}s {', '.join(map(str, numbers))})"


def topic_terms(topic: str, index=None) -> set[str]:
    """The topic's terms a place must name: all but those in more than COMMON_SHARE of the
    book's units (`index`: a loaded BookIndex), keeping the rarest when all are common."""
    terms = set(tokenize(topic))
    table = getattr(index, "sentences", None)
    if not terms or table is None or not table.texts:
        return terms
    share = {t: table.document_frequency.get(t, 0) / len(table.texts) for t in terms}
    return {t for t in terms if share[t] <= COMMON_SHARE} or {min(terms, key=share.get)}


def find_places(terms: set[str], hits: Sequence[Hit]) -> list[tuple[Hit, int]]:
    """The book's places among `hits` that treat the terms, with how (treats()), up to
    MAX_PLACES: chapters whose title names them (once each, by their best candidate), then
    sections whose heading does, then sections whose text does among the first MENTION_DEPTH,
    each kind in blended order."""
    by_kind: dict[int, list[Hit]] = {CHAPTER: [], SECTION: [], MENTION: []}
    seen: set[str] = set()
    ranked = sorted((h for h in hits if h.chunk.source == "book"), key=lambda h: -h.blended)
    for rank, hit in enumerate(ranked):
        how = treats(hit, terms) if terms else 0
        # a chapter once ("intro" of each module is a chapter of its own)
        key = f"{hit.chunk.module_id}/{hit.chunk.chapter_id}" if how == CHAPTER else \
            hit.chunk.section_key
        if not how or key in seen or (how == MENTION and rank >= MENTION_DEPTH):
            continue
        seen.add(key)
        by_kind[how].append(hit)
    return [(hit, how) for how in (CHAPTER, SECTION, MENTION) for hit in by_kind[how]
            ][:MAX_PLACES]


def names_topic(topic: str, candidates: Sequence[Hit], index=None) -> bool:
    """Some candidate's chapter title, heading path or (among the first MENTION_DEPTH) text
    names every term of the topic (topic_terms): the book treats it, whatever the blended
    scores say."""
    return bool(find_places(topic_terms(topic, index), candidates))


def navigation_draft(topic: str, hits: Sequence[Hit], candidates: Sequence[Hit] = (),
                     index=None, confidence: tuple[float, float] = NAVIGATION_CONFIDENCE,
                     kind: str = "") -> Draft:
    """The places that treat `topic` (find_places: from any candidate retrieval scored, as a
    chapter on the topic is the answer, passing the threshold or not), named and cited.
    `index`: the loaded book, for its section names and which terms are common (topic_terms);
    `confidence`: the answer's when a heading names the topic, and when only a text does;
    `kind`: the numbered kind of place asked for (asked_kind(): "Which week covers Gazebo?"),
    said beside each place whose folders or headings give it: "Gazebo Fundamentals (Week 6)"."""
    places = find_places(topic_terms(topic, index), [*hits, *candidates])
    if not places:
        return Draft(text=NOT_COVERED_SENTENCE, markers=(), generation_confidence=0.0,
                     provider=EXTRACTIVE, model=EXTRACTIVE, prompt="",
                     raw_response=NOT_COVERED_SENTENCE, sources=tuple(gather_sources(
                         hits, candidates)), led_by=f'no section found names "{topic}"')
    names = book_section_names(index)

    def listed(numbers: list[int]) -> str:
        said = []
        for n in numbers:
            hit, how = places[n]
            chunk = hit.chunk
            where = chunk.chapter_title if how == CHAPTER else place_name(chunk, names)
            said.append(f"{where}{numbered(chunk, kind, where)} [S{n + 1}]")
        return "; ".join(said[:-1]) + ("; and " if len(said) > 1 else "") + said[-1]

    headed = [n for n, (_, how) in enumerate(places) if how != MENTION]
    rest = [n for n, (_, how) in enumerate(places) if how == MENTION]
    sentences = [f"The book treats {topic} in {listed(headed)}."] if headed else []
    if rest:
        sentences.append(f"{'It also mentions it' if headed else f'The book mentions {topic}'}"
                         f" in {listed(rest)}.")
    text = " ".join(sentences)
    return Draft(text=text, markers=tuple(f"S{n + 1}" for n in range(len(places))),
                 generation_confidence=confidence[0] if headed else confidence[1],
                 provider=EXTRACTIVE, model=EXTRACTIVE, prompt="", raw_response=text,
                 sources=tuple(hit for hit, _ in places), calibrated=True,
                 places=tuple(range(len(places))),
                 led_by=f'a question about where the book treats "{topic}": the chapters and '
                        "sections that name it, in their titles first")
