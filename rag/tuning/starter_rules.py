"""Offline question templates for a starter set: one sentence (a quotable unit of the book) in,
at most one (question, key fact, category) out, or nothing when no template fits it cleanly.

Each template matches a shape that technical books use for facts and turns it into the question
a reader would type, with the fact the answer must hold:

- an acronym spelt out, "Model predictive control (MPC)" / "VIO (Visual-Inertial Odometry)" /
  "the zero moment point, or ZMP," -> "What does MPC stand for?" (key fact: the expansion);
- a definition, "Proprioception is the robot's sense of its own body." -> "What is
  proprioception?" (key fact: the words after the article, up to the first function word);
- a number with its unit, in a table row ("IMU: Typical rate 200–1000 Hz" -> "What is the typical
  rate for the IMU?"), a "Label: value" item, or a sentence whose subject comes first ("A
  well-designed get-up takes around 3 to 10 seconds" -> "How long does a well-designed get-up
  take?"; "Fingertip arrays commonly have a taxel spacing of 1 to 4 mm" -> "What taxel spacing
  do fingertip arrays have?").

Anything else is left alone: a wrong question costs a reviewer more than a missing one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import re2

from rag.tuning import starter_words as vocab
from rag.tuning.starter_acronyms import find_acronym

DEFINITION, NUMERIC = "definition", "numeric"
# at most 20 digits and commas before a point: unbounded, a number was tried from each digit of
# "1,1,1,..." to its end (1,000 characters: 0.9 s, quadratic)
NUMBER = r"(?:~\s?)?\d[\d,]{0,19}+(?:\.\d+)?(?:\s?(?:to|–|-|—)\s?\d[\d,]{0,19}+(?:\.\d+)?)?"
UNITS = {
    "time": r"ms|µs|us|s|sec|seconds?|minutes?|min|hours?|days?|weeks?",
    "frequency": r"Hz|kHz|MHz|GHz|fps",
    "length": r"nm|mm|cm|m|km|metres?|meters?|inch(?:es)?",
    "mass": r"g|kg|tonnes?",
    "force": r"N|kN|N·m|Nm",
    "share": r"%|percent",
    "angle": r"degrees?|°",
    "data": r"bits?|KB|MB|GB|TB",
    "power": r"W|kW|V|mAh|Wh",
    "speed": r"m/s|km/h",
}
ANY_UNIT = "|".join(UNITS.values())
QUANTITY_RE = re.compile(rf"(?<![\w.])(?P<value>{NUMBER}\s?(?:{ANY_UNIT})"
                         rf"(?:\s?(?:to|–|-)\s?{NUMBER}\s?(?:{ANY_UNIT}))?)(?![\w/])")
HEDGE = r"(?:(?:about|around|roughly|approximately|typically|usually|only|just|at least|at most|" \
        r"up to|over|under|nearly|almost|between|some|less than|more than)\s+)?"
ADVERB = r"(?:(?:typically|usually|commonly|often|normally|generally)\s+)?"
SUBJECT = r"(?P<subj>(?:(?:The|A|An|Most|Typical|Modern|Each)\s+)?[A-Za-z][\w'/-]*" \
          r"(?:\s+[A-Za-z0-9][\w'/-]*){0,5}?)"
DEFINITION_RE = re.compile(
    rf"^{SUBJECT}(?:,\s+or\s+(?P<alias>[^,]{{2,40}}),)?\s+(?P<be>is|are)\s+(?P<art>a|an|the)\s+"
    r"(?P<rest>[^.;:]+)")
TAKES_RE = re.compile(rf"^{SUBJECT}\s+{ADVERB}(?P<verb>takes|take|lasts|last)\s+{HEDGE}"
                      rf"(?P<value>{NUMBER}\s?(?:{UNITS['time']}))\b")
HAS_RE = re.compile(rf"^{SUBJECT}\s+{ADVERB}(?P<verb>has|have)\s+(?:a|an)\s+"
                    r"(?P<np>[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}?)\s+of\s+" + HEDGE +
                    rf"(?P<value>{NUMBER}\s?(?:{ANY_UNIT}))(?![\w/])")
RUNS_RE = re.compile(rf"^{SUBJECT}\s+{ADVERB}(?P<verb>runs|run|operates|operate|updates|update|"
                     rf"publishes|publish)\s+at\s+{HEDGE}(?P<value>{NUMBER}\s?(?:"
                     rf"{UNITS['frequency']}))\b")
PASSIVE_RE = re.compile(rf"^{SUBJECT}\s+(?P<be>is|are)\s+{ADVERB}(?P<verb>sampled|updated|"
                        r"refreshed|rated)\s+(?P<prep>at|for)\s+" + HEDGE +
                        rf"(?P<value>{NUMBER}\s?(?:{ANY_UNIT}))(?![\w/])")
WEIGHS_RE = re.compile(rf"^{SUBJECT}\s+{ADVERB}(?P<verb>weighs|weigh)\s+{HEDGE}"
                       rf"(?P<value>{NUMBER}\s?(?:{UNITS['mass']}))\b")
LABEL_RE = re.compile(r"^(?P<label>[A-Za-z][A-Za-z /-]{1,40}?)\s+(?P<value>[~<>≈]?\s?\d.*)$")
ITEM_LABEL_RE = re.compile(r"^(?P<label>[A-Z][A-Za-z /-]{1,30}):\s+(?P<value>.+)$")
PLURAL_ACRONYM_RE = re.compile(r"[A-Z][A-Za-z]{0,6}[A-Z]s")
# RE2, without backtracking: from every "(" of a title the bracket ran to its end (10,000
# characters: 1.8 s)
TITLE_NOISE_RE = re2.compile(
    r"(?i)^\s*(?:(?:step|task|part|exercise|lesson|week|module|section|chapter|option)\s+)?"
    r"\d+[A-Za-z]?(?:[.-]\d+)*\s*[.):-]?\s+|\s*\([^)]*\)\s*$")


@dataclass(frozen=True)
class Phrased:
    question: str
    key_fact: str
    category: str
    rank: int = 2  # how reliable the template is: acronyms and numbers 1, definitions 2
    genus: str = ""  # a definition's class word ("filter"), which the book must use elsewhere


def acronym_question(text: str) -> Phrased | None:
    found = find_acronym(text)
    if not found or PLURAL_ACRONYM_RE.fullmatch(found[0]):
        return None  # "What does CNNs stand for?" is no question a reader types
    return Phrased(f"What does {found[0]} stand for?", found[1], DEFINITION, 1)


def subject_phrase(subject: str, names: set[str]) -> str | None:
    """The subject as it reads inside a question, or None when it is no term of its own."""
    words = subject.split()
    if not words or words[0].lower() in vocab.NOT_SUBJECTS or len(words) > 6:
        return None
    if words[-1].lower() in vocab.GENERIC_HEADS or words[-1].lower() in vocab.FUNCTION_WORDS:
        return None
    if any(w.lower() in vocab.FUNCTION_WORDS - {"of"} for w in words):
        return None  # "Heat in the motor" is a clause, not a term
    if any(w.lower() in vocab.POINTING for w in words):
        return None  # "the first spaces variable", "your public API": which one, whose?
    if words[0].endswith("ly") or words[0].endswith("ing") and len(words) > 1 and \
            words[1].lower() in ("the", "a", "an", "its", "their", "each"):
        return None  # "Conceptually it", "Choosing the cutoff": no term
    first = words[0]
    if first in ("The", "A", "An", "Most", "Typical", "Modern") or (
            first[1:].islower() and first not in names):
        words[0] = first[0].lower() + first[1:]
    return " ".join(words)


def definition_fact(rest: str) -> str:
    """The term a definition gives: the words after the article, evaluative ones ("the
    simplest", "a classic") skipped, up to the first function word or punctuation; a generic
    head ("family", "sum") keeps its "of" complement ("family of methods"). "" when no
    specific word is left ("Latency is the critical factor")."""
    kept: list[str] = []
    for word in rest.split():
        bare = word.strip(",;:()\"'.")
        lower = bare.lower()
        if not kept and lower in vocab.EVALUATIVE:
            continue
        if not kept and word.startswith("("):
            return ""  # "a (Python) generator": the aside is no class of its own
        vague = bool(kept) and all(w.lower() in vocab.GENERIC_FACTS for w in kept)
        if not bare or lower in vocab.STOPPERS and not (lower == "of" and vague):
            break
        kept.append(bare)
        if bare != word or len(kept) == 5:
            break
    while kept and kept[-1].lower() in vocab.SMALL_WORDS | vocab.STOPPERS:
        kept.pop()  # "sum of" with nothing after it
    vague = vocab.EVALUATIVE | vocab.GENERIC_FACTS | vocab.SMALL_WORDS
    specific = [w for w in kept if w.lower() not in vague]
    if not specific or (len(kept) == 1 and len(kept[0]) < 5):
        return ""
    return " ".join(kept)


def definition_question(text: str, names: set[str], headings: str = "") -> Phrased | None:
    """"X is a/an/the Y" where X is what the headings (section and chapter titles) are about:
    "The command is the sum of three terms" under "PID basics" names no term of its own."""
    match = DEFINITION_RE.match(text)
    if not match or not about(match.group("subj"), headings):
        return None
    if match.group("subj").startswith("The ") and not about(match.group("subj"), headings, True):
        return None  # "The transmitter half" of a section on channels: the one just described
    subject = subject_phrase(match.group("subj"), names)
    fact = definition_fact(match.group("rest"))
    if not subject or not fact:
        return None
    return Phrased(f"What {match.group('be')} {subject}?", fact, DEFINITION,
                   genus=fact.split()[-1].lower())


def about(subject: str, headings: str, every: bool = False) -> bool:
    """A word of the subject (4+ letters; with `every`, each of them) shares its first five
    letters with a heading word ("Proprioception" / "Proprioceptive Sensors")."""
    stems = {w[:5] for w in re.findall(r"[a-z]{4,}", headings.lower())}
    shared = [w[:5] in stems for w in re.findall(r"[a-z]{4,}", subject.lower())]
    return all(shared) if every else any(shared)


def does(verb: str) -> tuple[str, str]:
    """("does", "take") for "takes", ("do", "take") for "take"."""
    if verb.endswith("es") and verb[:-2].endswith(("sh", "ch", "ss", "x")):
        return "does", verb[:-2]
    return ("does", verb[:-1]) if verb.endswith("s") else ("do", verb)


def sentence_number_question(text: str, names: set[str]) -> Phrased | None:
    """A number with its unit in a sentence whose subject comes first."""
    for pattern in (TAKES_RE, HAS_RE, RUNS_RE, PASSIVE_RE, WEIGHS_RE):
        match = pattern.match(text)
        if not match or not (subject := subject_phrase(match.group("subj"), names)):
            continue
        value, verb = match.group("value").strip(), match.group("verb")
        aux, base = does(verb)  # "takes" -> ("does", "take"); the passive pattern uses neither
        if pattern is TAKES_RE:
            return Phrased(f"How long {aux} {subject} {base}?", value, NUMERIC, 1)
        if pattern is HAS_RE:
            return Phrased(f"What {match.group('np')} {aux} {subject} have?", value, NUMERIC, 1)
        if pattern is RUNS_RE:
            return Phrased(f"At what rate {aux} {subject} {base}?", value, NUMERIC, 1)
        if pattern is WEIGHS_RE:
            return Phrased(f"How much {aux} {subject} weigh?", value, NUMERIC, 1)
        be, prep = match.group("be"), match.group("prep")
        if verb == "rated" and prep == "for":
            return Phrased(f"What {be} {subject} rated for?", value, NUMERIC, 1)
        if prep == "at" and verb != "rated":
            return Phrased(f"At what rate {be} {subject} {verb}?", value, NUMERIC, 1)
    return None


def topic_of(title: str, names: set[str]) -> str:
    """A heading or table cell as the object of a question: "2. Robot Model (25 points)" -> "the
    robot model", "IMU" -> "the IMU", "Gazebo" and "whole-body control" as they are; "" for a
    title that names no thing ("Overview", "Create the temperature publisher")."""
    cleaned = TITLE_NOISE_RE.sub("", TITLE_NOISE_RE.sub("", title)).strip(" :.-")
    words = cleaned.split()
    if words and words[0].lower() in ("the", "a", "an"):
        words = words[1:]
    while len(words) > 1 and words[-1].lower() in vocab.TRAILING_TITLE_WORDS:
        words = words[:-1]  # "Cloud Workstation Specifications" names the workstation
    if not words or len(words) > 6 or cleaned.lower() in vocab.GENERIC_TITLES or any(
            w.lower() in ("the", "a", "an", "your", "you", "our", "how", "what", "why")
            for w in words) or not re.search(r"[A-Za-z]{3}", cleaned):
        return ""
    out, named = [], False
    for w in words:  # "Jetson Orin Nano Super": a name's capitals run on
        named = w in names or named and w[:1].isupper()
        out.append(w if named or not w[1:].islower() else w.lower())
    joined, last = " ".join(out), out[-1].lower()
    proper = out[0][0].isupper() and out[0][1:].islower()
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
    bare = plural or proper or last in vocab.MASS_NOUNS or last.endswith("ing") or any(
        w in ("and", "or", "/") for w in out)
    return joined if bare else f"the {joined}"


def labelled_number_question(text: str, kind: str, title: str, names: set[str]
                             ) -> Phrased | None:
    """"IMU: Typical rate 200–1000 Hz; ..." (a table row) or "Update rate: 30 Hz" (an item under
    a heading that names the thing); the label must name a quantity (rate, latency, RAM...)."""
    if kind == "row" and ": " in text:
        first, rest = text.split(": ", 1)
        subject = topic_of(first, names)
        for part in rest.split("; "):
            label = LABEL_RE.match(part.strip())
            quantity = QUANTITY_RE.search(part)
            if label and quantity and subject and _quantity_label(label.group("label")):
                return _what_is(label.group("label"), subject, quantity.group("value"))
        return None
    item = ITEM_LABEL_RE.match(text)
    if kind != "item" or not item or not _quantity_label(item.group("label")):
        return None
    quantity = QUANTITY_RE.search(item.group("value"))
    topic = topic_of(title, names)
    if quantity and topic and len(item.group("value")[:quantity.start()].split()) <= 2:
        return _what_is(item.group("label"), topic, quantity.group("value"))
    return None


def _quantity_label(label: str) -> bool:
    words = label.lower().split()
    return 0 < len(words) <= 4 and any(w in vocab.QUANTITY_WORDS for w in words)


def _what_is(label: str, topic: str, value: str) -> Phrased:
    name = _label(label)
    be = "are" if name.split()[-1].endswith("s") and not name.endswith("ss") else "is"
    return Phrased(f"What {be} the {name} for {topic}?", value.lstrip("~ "), NUMERIC, 1)


def _label(label: str) -> str:
    """"Typical rate" -> "typical rate"; acronyms ("RAM", "DOF") keep their capitals."""
    return " ".join(w if w[1:] != w[1:].lower() else w.lower() for w in label.split())


def phrase_offline(text: str, kind: str, title: str, names: set[str], headings: str = ""
                   ) -> Phrased | None:
    """The first template that fits the unit, in order of how reliable it is; `headings` are
    the section's and chapter's titles (definitions must be about them)."""
    if kind in ("row", "item"):
        if found := labelled_number_question(text, kind, title, names):
            return found
    return (acronym_question(text) or sentence_number_question(text, names)
            or (definition_question(text, names, headings or title) if kind == "prose"
                else None))
