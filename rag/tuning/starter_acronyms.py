"""Acronyms a sentence spells out, for starter questions such as "What does MPC stand for?":
"Model predictive control (MPC)", "VIO (Visual-Inertial Odometry)", "the zero moment point, or
ZMP,". The expansion counts only when the initials of its words spell the acronym (hyphenated
parts and small words such as "of" may count or not: "Degrees of Freedom (DoF)")."""

from __future__ import annotations

import re

from rag.tuning.starter_words import SMALL_WORDS

EXPANSION_RE = re.compile(r"\(([A-Z][A-Za-z0-9]{1,7})\)")  # "... (MPC)"
ACRONYM_FIRST_RE = re.compile(r"\b([A-Z][A-Za-z0-9]{1,7})\s+\(([A-Za-z][\w\s-]{4,60})\)")
OR_ACRONYM_RE = re.compile(r"([A-Za-z][\w\s-]{3,60}?),\s+or\s+([A-Z][A-Za-z0-9]{1,7}),")


def initials(words: list[str], split_hyphens: bool, skip_small: bool) -> str:
    parts = [p for w in words for p in (w.split("-") if split_hyphens else [w]) if p]
    kept = [p for p in parts if not (skip_small and p.lower() in SMALL_WORDS)]
    return "".join(p[0] for p in kept).lower()


def spelt_out(acronym: str, text_before: str) -> str:
    """The words just before `acronym` whose initials spell it ("" when none do)."""
    letters = re.sub(r"[^A-Za-z]", "", acronym.removesuffix("s")).lower()
    words = re.findall(r"[A-Za-z][\w'-]*", text_before)[-(len(letters) + 3):]
    for n in range(1, len(words) + 1):
        tail = words[-n:]
        if tail[0].lower() in SMALL_WORDS:
            continue
        for hyphens in (False, True):
            for skip in (False, True):
                if initials(tail, hyphens, skip) == letters:
                    return " ".join(tail)
    return ""


def find_acronym(text: str) -> tuple[str, str] | None:
    """(acronym, its expansion as the sentence writes it) for the first acronym spelt out."""
    for match in EXPANSION_RE.finditer(text):
        acronym = match.group(1)
        if sum(c.isupper() for c in acronym) >= 2 and (full := spelt_out(acronym,
                                                                          text[:match.start()])):
            return acronym, full
    for pattern, swap in ((ACRONYM_FIRST_RE, False), (OR_ACRONYM_RE, True)):
        for match in pattern.finditer(text):
            acronym, words = (match.group(2), match.group(1)) if swap else match.groups()
            if sum(c.isupper() for c in acronym) < 2:
                continue
            if full := spelt_out(acronym, words) if swap else _leading(acronym, words):
                return acronym, full
    return None


def _leading(acronym: str, words: str) -> str:
    """"Visual-Inertial Odometry" for VIO: the leading words of a parenthesis that spell it."""
    found = re.findall(r"[A-Za-z][\w'-]*", words)
    for n in range(len(found), 0, -1):
        if spelt_out(acronym, " ".join(found[:n])) == " ".join(found[:n]):
            return " ".join(found[:n])
    return ""
