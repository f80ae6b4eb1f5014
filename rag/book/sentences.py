"""A section's text as the units an extractive answer may quote: prose sentences, list items,
table rows and one-line commands, cleaned of Markdown (rag.book.inline). A list item keeps the
label it sits under, short items are quoted together and labelled items also make an overview
(list_units), so a quoted item still says what it is about. Ingest embeds these units and the
answerer scores them, so both see exactly the same text.

Headings, quiz questions and code are not units, but a short command right after a lead-in
("**Solution**: ```source setup.bash```", with or without a blank line between) is one, and so
is each commented step of a shell block ("# Retry build" over "colcon build") and a program's
comment with the line it explains (rag.book.code): technical books put the fix there. A
lead-in ending in ':' is quoted as it stands unless a unit carries it (the items it labels, the
command after it): it often holds the answer ("Create a state machine or behavior tree:" over
steps, "Provide a 2-3 page analysis covering:" over bold-labelled parts, "Group related nodes
under a namespace:" over a program). Dropping them left 58 sections of the Physical AI book
without a unit and 12 key facts of the development sets in no unit (now 43, all reading lists
and code, and 6). A code span keeps what it holds (`ros__parameters`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rag.book.code import code_units
from rag.book.inline import (
    ANSWER_LABEL_RE,
    MAX_WORDS,
    clean_inline,
    link_share,
    quotable,
    says_something,
    table_row,
)

PROSE, ITEM, COMMAND, ROW, HEADING = "prose", "item", "command", "row", "heading"
SHORT_ITEM = 6  # words: siblings all this short are one unit ("Advantages: Low cost; ...")
MIN_OVERVIEW = 3  # labelled items ("- **Friction cones**: ...") that also make an overview unit
LABEL_WORDS = 4  # a label this short leads each longer item under it ("Limitations")

FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")
ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
RULE_RE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|:::.*|<[^>]+>\s*|import .* from .*;?)\s*$")
# A sentence ends at . ! ? followed by a capital, a digit or an opening mark; "e.g.", "i.e.",
# "vs." and decimals ("2.5") do not end one (the glossary's "Upfront costs ... vs. OpEx").
SENTENCE_END_RE = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bvs\.)(?<=[.!?])\s+(?=[\"'(\[*_`A-Z0-9])")
# A reference list's entry, "Tobin, J., et al. (2017). "Domain randomization ..." IROS.", is one
# unit: split at its full stops it read "Tobin, J., et al." and a title on its own.
CITATION_RE = re.compile(r"^[A-Z][\w'’-]+(?: [A-Z][\w'’-]+)*, (?:[A-Z]\.[ ,]*)+.{0,200}?"
                         r"\(\d{4}[a-z]?\)\.")
# "**Label:** value" or "**Label**: value"
FIELD_RE = re.compile(r"^(?:\*\*|__)[^*_]{1,40}?(?::(?:\*\*|__)|(?:\*\*|__):)\s")
# A bold label's own numbering ("**2. Missing robot_state_publisher**:" above its fix): the
# book's count of causes, not part of what it says (a quote read "2. Missing ...: ros2 run ...").
NUMBERED_LABEL_RE = re.compile(r"^\d{1,2}[.)]\s+(?=[A-Z])")
BOLD_LINE_RE = re.compile(r"^(\*\*|__)[^*_].*\1:?$")  # "**Tested with ROS 2 Humble**"
OWN_LABEL_RE = re.compile(r"^([^:;.]{1,40}):\s")  # "GPU: NVIDIA RTX ..." says what it is about


TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{2,}")
# "VIO (Visual-Inertial Odometry)" or "Sensor Fusion (SF)": a heading that spells out an acronym
EXPANSION_RE = re.compile(r"\([A-Za-z][^)]{4,}\)|\([A-Z][A-Z0-9]{1,7}\)")


@dataclass(frozen=True)
class Unit:
    text: str
    kind: str  # prose | item | command
    block: int  # units of one paragraph or one list share a block number


def split_section(text: str, heading: str = "", labelled: bool = True) -> list[Unit]:
    """Quotable units of one section, in book order; a heading that spells out an acronym
    ("VIO (Visual-Inertial Odometry)") is a unit too. List items carry the label they sit under
    (list_units); with `labelled` False each item is a unit as written (the starter questions
    phrase one item at a time)."""
    units: list[Unit] = []
    if heading and EXPANSION_RE.search(heading):
        units.append(Unit(_unnumbered(heading), HEADING, 0))  # "1. LIDAR (...)" without "1."
    header: list[str] = []
    paragraph: list[str] = []
    items: list[tuple[int, str]] = []  # the open list: (indent, cleaned item text)
    block = 0
    lead_in = ""  # the previous line, when it ended in ':' (it may introduce a command)
    leads: list[tuple[int, Unit]] = []  # paragraphs' closing lead-ins, where they stood
    label = ""  # the last paragraph's closing sentence, when it ends in ':' (it heads a list)
    title = _unnumbered(heading)  # the heading (or bold line) right above a list

    def flush() -> None:
        nonlocal block, label, title
        joined = NUMBERED_LABEL_RE.sub("", ANSWER_LABEL_RE.sub("", clean_inline(" ".join(
            paragraph))))
        bold = len(paragraph) == 1 and BOLD_LINE_RE.match(paragraph[0])
        paragraph.clear()
        if joined:
            block += 1
            title = joined.rstrip(":") if bold else ""  # a bold line heads what follows
            sentences = sentences_of(joined)
            units.extend(Unit(s, PROSE, block) for s in sentences if quotable(s))
            label = sentences[-1] if sentences[-1].endswith(":") else ""
            if label:
                leads.append((len(units), Unit(label, PROSE, block)))

    def close_list() -> None:
        nonlocal block, label, title
        if items:
            block += 1
            texts = list_units(items, label, title) if labelled else \
                [part for _, t in items for part in _item_parts(t, "")]
            units.extend(Unit(t, ITEM, block) for t in texts)
            items.clear()
            label = title = ""

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if FENCE_RE.match(line):
            flush()
            close_list()
            end = next((j for j in range(i + 1, len(lines)) if FENCE_RE.match(lines[j])),
                       len(lines))
            texts = code_units(lead_in, lines[i + 1:end], FENCE_RE.sub("", line), title)
            block += bool(texts)
            units.extend(Unit(text, COMMAND, block) for text in texts)
            lead_in, label, title, i = "", "", "", end + 1
            continue
        stripped = line.strip()
        lead = _unnumbered(ITEM_RE.sub("", stripped, count=1))  # "2. Check it:" -> "Check it:"
        if stripped:  # a blank line between "Verify installation:" and its command keeps it
            lead_in = lead if lead.endswith(":") and len(lead.split()) <= 12 else ""
        if stripped.startswith("|"):
            flush()
            close_list()
            label = title = ""
            if TABLE_SEPARATOR_RE.match(stripped.strip("|")):
                pass
            elif not header:
                header = [clean_inline(c) for c in stripped.strip("|").split("|")]
            elif row := table_row(stripped, header):
                block += 0 if units and units[-1].kind == ROW else 1
                units.append(Unit(row, ROW, block))
        elif not stripped:
            flush()
            header = []
        elif HEADING_RE.match(line) or RULE_RE.match(line):
            flush()
            close_list()
            header, label = [], ""
            title = "" if RULE_RE.match(line) else _unnumbered(line.lstrip(" #"))
        elif ITEM_RE.match(line):
            flush()
            raw = ITEM_RE.sub("", line, count=1)
            if link_share(raw) <= 0.4:  # else a reading-list entry
                items.append((len(line) - len(line.lstrip()), clean_inline(raw)))
        elif items and line[:1].isspace() and not paragraph:  # an item's continuation line
            items[-1] = (items[-1][0], f"{items[-1][1]} {lead}".strip())
        else:
            close_list()
            if FIELD_RE.match(stripped.lstrip("> ")):  # "**Weight:** 40%" lines: one unit each
                flush()
            if paragraph and stripped.startswith(": "):  # a definition list: "Term\n: meaning"
                paragraph[-1] += stripped
            else:
                paragraph.append(stripped.lstrip("> "))
        i += 1
    flush()
    close_list()
    return _dedupe(_with_lost_leads(units, leads))


def _with_lost_leads(units: list[Unit], leads: list[tuple[int, Unit]]) -> list[Unit]:
    """`units` with each lead-in that no unit carries quoted where it stood, colon kept, when
    it says something (rag.book.inline.says_something). A unit carries a lead-in when it holds
    it, or its part after a label: the command "Add it to package.xml: <exec_depend>..."
    carries "Solution: Add it to package.xml:"."""
    carried, out = [u.text.lower() for u in units], list(units)
    for position, lead in reversed(leads):
        core = lead.text[:-1].strip().lower()
        own = part if quotable(part := core.split(": ", 1)[-1]) else core
        if says_something(lead.text) and not any(core in t or own in t for t in carried):
            out.insert(position, lead)
    return out


def list_units(items: list[tuple[int, str]], lead: str = "", title: str = "") -> list[str]:
    """The units of one list. An item sits under its parent item (the nearest one before it that is
    indented less) or, at the top, under the sentence that introduces the list when that ends in
    ':'. Siblings that are all short make one unit with their label (at the top, the heading or
    bold line right above the list when nothing introduces it): "Advantages: High update rate
    (100-1000 Hz); Compact and lightweight; Low cost". Longer ones are a unit each, led by a
    short label ("Visual-Inertial Odometry (VIO): Combines camera and IMU data ...") so the item
    still says what it is about; when three or more of them each open with their own label
    ("Friction cones: ..."), the labels also make one overview unit ("The constraints encode
    physics and hardware limits: Equations of motion; Friction cones; ..."), which answers "what
    constraints are there?". An item ending in ':' with items under it is their label, not a
    unit."""
    parents: list[int] = []
    stack: list[int] = []
    for n, (indent, _) in enumerate(items):
        while stack and items[stack[-1]][0] >= indent:
            stack.pop()
        parents.append(stack[-1] if stack else -1)
        stack.append(n)
    labels = {p for p in parents if p >= 0 and items[p][1].endswith(":")}
    out: list[tuple[float, str]] = []  # (position of the first item, unit text)
    for parent in dict.fromkeys(parents):
        group = [n for n, p in enumerate(parents)
                 if p == parent and n not in labels and not items[n][1].endswith("?")]
        name = (items[parent][1] if parent >= 0 else lead).rstrip(":").strip()
        if not group:  # only labels under it: "Two schemes are common: WIO; Lidar + Map"
            heads = [items[n][1].rstrip(":") for n in sorted(labels) if parents[n] == parent]
            if len(heads) > 1 and name:
                out.append((parents.index(parent) - 0.5, _led(name, heads)))
            continue
        texts = [items[n][1] for n in group]
        head = name or title.rstrip(":")
        merged = f"{head}: {'; '.join(texts)}" if head else "; ".join(texts)
        if len(group) > 1 and all(len(t.split()) <= SHORT_ITEM for t in texts) and \
                len(merged.split()) <= MAX_WORDS:
            out.append((group[0], merged))
            continue
        own = [m.group(1).strip() for t in texts if (m := OWN_LABEL_RE.match(t))]
        if len(group) >= MIN_OVERVIEW and len(own) == len(group) and \
                all(len(x.split()) <= SHORT_ITEM for x in own):  # "- **Friction cones**: ..."
            overview = "; ".join(own)
            out.append((group[0] - 0.5, f"{head}: {overview}" if head else overview))
        if parent in labels and len(name.split()) > LABEL_WORDS and says_something(name + ":"):
            out.append((parent, items[parent][1]))  # too long to lead each item: quoted alone
        for n, t in zip(group, texts, strict=True):
            out.extend((n, part) for part in _item_parts(t, name))
    return [t for _, t in sorted(out, key=lambda o: o[0])]


def _led(lead: str, texts: list[str]) -> str:
    """A lead-in with as many of the labels it introduces as fit in MAX_WORDS ("Two schemes
    are common: Wheel-Inertial Odometry; Lidar + Map Matching"); alone, colon kept, when not
    even the first fits."""
    taken: list[str] = []
    for text in texts:
        if len(f"{lead}: {'; '.join([*taken, text])}".split()) > MAX_WORDS:
            break
        taken.append(text)
    return f"{lead}: {'; '.join(taken)}" if taken else f"{lead}:"


def _item_parts(item: str, name: str) -> list[str]:
    """An item's sentences (an item may hold several), the first led by a short label unless it
    has its own ("GPU: ...")."""
    parts = []
    for k, part in enumerate(sentences_of(item)):
        if k == 0 and name and len(name.split()) <= LABEL_WORDS and not OWN_LABEL_RE.match(part) \
                and not part.lower().startswith(name.lower()):
            part = f"{name}: {part}"
        if quotable(part) or (len(part.split()) >= 2 and re.search(r"\d", part) and
                              not part.endswith((":", "?"))):
            parts.append(part)
    return parts


def _unnumbered(text: str) -> str:
    """Inline markdown cleaned and a label's own numbering dropped: "**2. Check it**:" ->
    "Check it:"."""
    return NUMBERED_LABEL_RE.sub("", clean_inline(text))


def sentences_of(text: str) -> list[str]:
    """A paragraph's or an item's sentences; a reference entry whole (CITATION_RE)."""
    return [text] if CITATION_RE.match(text) else SENTENCE_END_RE.split(text)


def _dedupe(units: list[Unit]) -> list[Unit]:
    seen: set[str] = set()
    out = []
    for unit in units:
        key = unit.text.lower()
        if key not in seen:
            seen.add(key)
            out.append(unit)
    return out
