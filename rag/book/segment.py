"""Sentence boundaries, one splitter for every part of Folio that cuts prose (quotable units,
chunks): a sentence ends at '.', '!', '?' or '…' (with any closing quote or bracket) followed by
space and a capital, a digit or an opening mark, unless the word before the full stop is an
abbreviation ("See Fig. 3", "Dr. Smith", "et al. (2017)", "approx. 5 kg"), an initial or an
initialism ("J. Smith", "The U.S. Army", "e.g. this").

pysbd was tried first: it split "approx.|5 kg", "Call f|(x)." and "pip install -e .|to install",
and it runs dozens of regexes per paragraph. This scan is linear: one pass finds candidate stops,
each is judged by the word before it and the character after it.
"""

from __future__ import annotations

import re

# Never end a sentence: titles, references to numbered things, Latin and common short forms.
ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt gen col capt lt sgt rev hon gov sen rep pres messrs mme mlle
fig figs eq eqs sec secs ch chap chaps vol vols pp para paras tab tabs ref refs ed eds app appx
thm prop lem cor def defn
e.g i.e vs cf al approx ca viz resp incl esp excl est dept univ assoc inc ltd co corp bros
jan feb mar apr jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun
""".split())
# End a sentence unless a number follows: "No. 5", "p. 12", "Art. 3", "Ex. 2" (but "The
# answer is no. Then ..." ends one).
BEFORE_NUMBER = frozenset({"no", "nos", "p", "art", "ex", "nr", "op"})
# A full stop, '!', '?' or an ellipsis, closing marks after it, then whitespace. Possessive, and
# never starting inside a run of stops: a scan of "....." is linear, not one pass per dot.
STOP_RE = re.compile(r"(?<![.!?…])[.!?…]++[\"'”’)\]]*+\s+")
OPENERS = "\"'“‘([*_`$"
# A reference list's entry, "Tobin, J., et al. (2017). "Domain randomization ..." IROS.", is one
# unit: split at its full stops it read "Tobin, J., et al." and a title on its own.
CITATION_RE = re.compile(r"^[A-Z][\w'’-]+(?: [A-Z][\w'’-]+)*, (?:[A-Z]\.[ ,]*+)++.{0,200}?"
                         r"\(\d{4}[a-z]?\)\.")
INITIALISM_RE = re.compile(r"(?:[A-Za-z]\.){1,5}$")  # "U.S." "e.g." "J." (the stop included)


def split_sentences(text: str) -> list[str]:
    """The sentences of one paragraph (whitespace inside it as it was), in order; empty text
    gives []."""
    text = text.strip()
    if not text:
        return []
    out, start = [], 0
    for m in STOP_RE.finditer(text):
        if _ends_here(text, m.start(), m.end()):
            out.append(text[start:m.end()].strip())
            start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def _ends_here(text: str, stop: int, after: int) -> bool:
    """Whether the stop at `stop` (whose marks and whitespace end at `after`) ends a sentence."""
    if after >= len(text):
        return True
    following = text[after]
    if not (following.isupper() or following.isdigit() or following in OPENERS):
        return False  # "e.g. a list", "config.yaml. edit": a lower-case word goes on
    if text[stop] != ".":
        return True  # '?', '!' and '…' always end one before a capital
    if text[stop:stop + 2] == "..":
        return True  # an ellipsis before a capital
    word = _word_before(text, stop)
    if not word:
        return True
    bare = word.lower().rstrip(".")
    if bare in ABBREVIATIONS:
        return False
    if bare in BEFORE_NUMBER:
        return not following.isdigit()
    if len(word) == 1:  # "J. Smith" is an initial; "0.3 s. For", "2.5 N. The" end on a unit
        return not word.isupper() or _after_number(text, stop - 1)
    # "U.S. Army", "e.g. ...": letters each followed by a stop (the last one this)
    return not ("." in word and INITIALISM_RE.match(word + "."))


def _after_number(text: str, at: int) -> bool:
    """Whether the word starting at `at` follows a number ("5 N", "0.3 s")."""
    before = text[max(0, at - 12):at].rstrip()
    return bool(before) and before[-1].isdigit()


def _word_before(text: str, stop: int) -> str:
    """The word that ends at `stop` (its internal full stops kept: "U.S", "e.g")."""
    begin = stop
    while begin > 0 and (text[begin - 1].isalnum() or text[begin - 1] == "."):
        begin -= 1
    return text[begin:stop].lstrip(".")


def sentences_of(text: str) -> list[str]:
    """A paragraph's or an item's sentences; a reference entry whole (CITATION_RE)."""
    return [text] if CITATION_RE.match(text) else split_sentences(text) or [text]
