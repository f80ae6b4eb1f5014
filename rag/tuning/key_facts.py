"""Does an answer contain a question's key facts?

Key facts are matched on normalised text: case-folded, markdown marks and citation markers
dropped, backslash escapes read (the canonical Markdown of a section writes a cell's "0.3" as
"0\\.3"), hyphens and dashes read as spaces, whitespace collapsed, a number and its unit with or
without a space ("64 GB" is "64GB"), and whole words only ("ODE" is not in "node", "5 cm" is not
in "15 cm" nor in "0.5 cm"). An emphasis mark is dropped only where it is markup (`*x*`, `__x__`),
so a fact like "A*" keeps its star and must appear as "A*", not as any word "a".

A fact the book states in more than one wording (an acronym and its expansion, the same point
made in two places) lists them separated by " | ": "DDS | Data Distribution Service" is met by
either. The wordings are one fact: the answer needs one of them, not all.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import re2

from rag.book.inline import UNHIDE, hide_escapes

DASH_RE = re.compile("[-\u2010\u2011\u2012\u2013\u2014\u2015]")
# RE2 for the links, without backtracking: from each of many "](" the address ran to the end
LINKED_CITATION_RE = re2.compile(r"(?i)\[\[\s*S?\d+\s*\]\]\([^)\s]*\)")  # [[1]](url)
CITATION_RE = re.compile(r"\[\s*S?\d+(?:\s*[,;]\s*S?\d+)*\s*\]", re.IGNORECASE)  # [S1], [1, 2]
LINK_RE = re2.compile(r"!?\[([^\[\]]*)\]\([^)\s]*\)")  # [text](url) -> text
# a closing run of #s taken from the first blank before it: from each blank of 1,000 it was
# quadratic (50 ms), now linear (0.1 ms)
HEADING_RE = re.compile(r"^[ \t]*#{1,6}(?=\s)|(?<![ \t])[ \t]++#++[ \t]*+$", re.MULTILINE)
BULLET_RE = re.compile(r"^[ \t]*[*+](?=\s)", re.MULTILINE)  # "- item" is a dash, read as space
STAR_RE = re.compile(r"(\*{1,3})(?!\s)(.+?)(?<!\s)\1")
# CommonMark: `_` opens and closes emphasis only at word edges, so snake_case stays whole
UNDERSCORE_RE = re.compile(r"(?<![^\W_])(_{1,3})(?!\s)(.+?)(?<!\s)\1(?![^\W_])")
NUMBER_UNIT_RE = re.compile(r"(?<=\d) ?(?=[^\W\d_])")  # between "64" and "GB", spaced or not
WORDING_SEPARATOR = "|"  # written " | " between the wordings of one fact
QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


def normalise_text(text: str) -> str:
    """The text key facts are looked for in (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).translate(QUOTES)
    # an escaped "\\*" is a star, not emphasis: hidden while the marks are dropped, read after
    text = hide_escapes(text).replace("`", "")
    text = BULLET_RE.sub(" ", HEADING_RE.sub(" ", text))
    for pattern in (STAR_RE, UNDERSCORE_RE, STAR_RE):  # nested: ***x***, **_x_**
        text = pattern.sub(r"\2", text)
    text = LINKED_CITATION_RE.sub(" ", text)
    text = CITATION_RE.sub(" ", LINK_RE.sub(r"\1", text)).translate(UNHIDE).replace("`", "")
    return " ".join(DASH_RE.sub(" ", text.casefold()).split())


def fact_pattern(fact: str) -> re.Pattern[str]:
    """Whole words at the fact's word edges; a number does not continue "0.5" or "1,500"; a
    number and the unit after it match with or without a space ("64 GB" is "64GB")."""
    start = r"(?<![^\W_])" if fact[0].isalnum() else ""
    start += r"(?<!\d[.,])" if fact[0].isdigit() else ""
    end = r"(?![^\W_])" if fact[-1].isalnum() else ""
    end += r"(?![.,]\d)" if fact[-1].isdigit() else ""
    body = " ?".join(re.escape(part) for part in NUMBER_UNIT_RE.split(fact))
    return re.compile(start + body + end)


def wordings(fact: str) -> tuple[str, ...]:
    """The wordings of one fact ("DDS | Data Distribution Service"), each as written."""
    return tuple(a.strip() for a in fact.split(WORDING_SEPARATOR) if a.strip())


def fact_patterns(fact: str) -> list[re.Pattern[str]]:
    """One pattern per wording of the fact that has text left after normalising (a wording of
    only marks or dashes cannot be checked)."""
    keys = (normalise_text(a) for a in wordings(fact))
    return [fact_pattern(key) for key in keys if key]


def key_facts_found(answer: str, facts: Iterable[str]) -> tuple[bool, ...]:
    """Per fact: does the answer contain it (one of its wordings)? A fact with no text left
    after normalising (only marks or dashes) cannot be checked and counts as missing."""
    text = normalise_text(answer)
    return tuple(any(p.search(text) for p in fact_patterns(fact)) for fact in facts)


def contains_key_facts(answer: str, facts: Iterable[str]) -> bool:
    """True when the answer contains every key fact (and so for no facts at all)."""
    return all(key_facts_found(answer, facts))
