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
    clean_inline,
    link_share,
    quotable,
    says_something,
    table_row,
)
from rag.book.lists import list_units, split_item
from rag.book.segment import sentences_of

PROSE, ITEM, COMMAND, ROW, HEADING = "prose", "item", "command", "row", "heading"

FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")
ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
RULE_RE = re.compile(r"^\s*+(?:-{3,}|\*{3,}|_{3,}|<[^<>]{1,2000}>)\s*$")
MATH_RE = re.compile(r"^\s*\$\$")
# "**Label:** value" or "**Label**: value"
FIELD_RE = re.compile(r"^(?:\*\*|__)[^*_]{1,40}?(?::(?:\*\*|__)|(?:\*\*|__):)\s")
# A bold label's own numbering ("**2. Missing robot_state_publisher**:" above its fix): the
# book's count of causes, not part of what it says (a quote read "2. Missing ...: ros2 run ...").
NUMBERED_LABEL_RE = re.compile(r"^\d{1,2}[.)]\s+(?=[A-Z])")
BOLD_LINE_RE = re.compile(r"^(\*\*|__)[^*_].*\1:?$")  # "**Tested with ROS 2 Humble**"


TABLE_SEPARATOR_RE = re.compile(r"^\s*+\|?\s*+:?-{2,}")
# "VIO (Visual-Inertial Odometry)" or "Sensor Fusion (SF)": a heading that spells out an acronym
EXPANSION_RE = re.compile(r"\([A-Za-z][^)]{4,200}\)|\([A-Z][A-Z0-9]{1,7}\)")


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
                [part for _, t in items for part in split_item(t, "")]
            units.extend(Unit(t, ITEM, block) for t in texts)
            items.clear()
            label = title = ""

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if MATH_RE.match(line):  # a display equation is no quotable sentence
            flush()
            close_list()
            i = math_end(lines, i) + 1
            continue
        if FENCE_RE.match(line):
            flush()
            close_list()
            end = fence_end(lines, i)
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


def _unnumbered(text: str) -> str:
    """Inline markdown cleaned and a label's own numbering dropped: "**2. Check it**:" ->
    "Check it:"."""
    return NUMBERED_LABEL_RE.sub("", clean_inline(text))


def fence_end(lines: list[str], start: int) -> int:
    """The line closing the fence opened at `start` (the same character, at least as many of
    it, nothing after): a ```` fence holding ``` lines ends at its own ````."""
    opening = lines[start].strip()
    marker = opening[:len(opening) - len(opening.lstrip(opening[0]))]
    for j in range(start + 1, len(lines)):
        closing = lines[j].strip()
        if closing.startswith(marker) and not closing.lstrip(marker[0]).strip():
            return j
    return len(lines)


def math_end(lines: list[str], start: int) -> int:
    """The line closing a display equation opened at `start` ($$ ... $$, one line or many)."""
    opening = lines[start].strip()
    if len(opening) > 2 and opening.endswith("$$"):
        return start
    return next((j for j in range(start + 1, len(lines)) if lines[j].strip().endswith("$$")),
                len(lines) - 1)


def _dedupe(units: list[Unit]) -> list[Unit]:
    seen: set[str] = set()
    out = []
    for unit in units:
        key = unit.text.lower()
        if key not in seen:
            seen.add(key)
            out.append(unit)
    return out
