"""A section's text as the units an extractive answer may quote: prose sentences, list items and
one-line commands, cleaned of Markdown (links keep their text, images and HTML go).

Ingest embeds these units and the answerer scores them, so both see exactly the same text.
Headings, tables, quiz questions, lead-ins ending in ':' and code are not quotable units, but a
short command right after a lead-in ("**Solution**: ```source setup.bash```") is, as one unit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROSE, ITEM, COMMAND, ROW, HEADING = "prose", "item", "command", "row", "heading"
MIN_WORDS, MAX_WORDS = 4, 80
MAX_COMMAND_LINES = 2  # a longer block is a program, not an answer

FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s")
ITEM_RE = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?")
RULE_RE = re.compile(r"^\s*(?:-{3,}|\*{3,}|_{3,}|:::.*|<[^>]+>\s*|import .* from .*;?)\s*$")
# A sentence ends at . ! ? followed by a capital, a digit or an opening mark; abbreviations such
# as "e.g." and "i.e." and decimals ("2.5") do not end one.
SENTENCE_END_RE = re.compile(
    r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<=[.!?])\s+(?=[\"'(\[*_`A-Z0-9])")
IMAGE_RE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK_RE = re.compile(r"\[([^\]]*)\]\([^)]*\)")
URL_RE = re.compile(r"<?https?://\S+>?")
HTML_RE = re.compile(r"</?[a-zA-Z][^>]*>")
EMPHASIS_RE = re.compile(r"\*\*|__|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")
QUIZ_RE = re.compile(r"^(?:Q\d*[:.]|Question\b|Exercise\b|Quiz\b|Task\b|Challenge\b)", re.I)


TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{2,}")
# "VIO (Visual-Inertial Odometry)" or "Sensor Fusion (SF)": a heading that spells out an acronym
EXPANSION_RE = re.compile(r"\([A-Za-z][^)]{4,}\)|\([A-Z][A-Z0-9]{1,7}\)")


@dataclass(frozen=True)
class Unit:
    text: str
    kind: str  # prose | item | command
    block: int  # units of one paragraph or one list share a block number


def clean_inline(text: str) -> str:
    """Markdown marks out, link text kept, whitespace collapsed."""
    text = IMAGE_RE.sub("", text)
    text = LINK_RE.sub(r"\1", text)
    text = URL_RE.sub("", text)
    text = HTML_RE.sub("", text)
    text = EMPHASIS_RE.sub("", text).replace("`", "")
    return " ".join(text.split()).strip(" -–—|")


def quotable(text: str) -> bool:
    words = text.split()
    if not MIN_WORDS <= len(words) <= MAX_WORDS or not re.search(r"[A-Za-z]{2}", text):
        return False
    return not (text.endswith(("?", ":")) or QUIZ_RE.match(text))


def link_share(raw: str) -> float:
    """How much of a line is link text: a list of links is a reading list, not an answer."""
    linked = sum(len(m.group(1)) for m in LINK_RE.finditer(raw))
    return linked / max(len(clean_inline(raw)), 1)


def table_row(line: str, header: list[str]) -> str:
    """A table row as "first cell: header other cell; ..." (the header names what a short
    value is: "Humanoid: DOF 20-40+")."""
    cells = [clean_inline(c) for c in line.strip().strip("|").split("|")]
    if len([c for c in cells if c]) < 2:
        return ""
    names = header if len(header) == len(cells) else [""] * len(cells)
    rest = [f"{name} {cell}".strip() if len(cell.split()) <= 3 and name.lower() not in
            cell.lower() else cell for name, cell in zip(names[1:], cells[1:], strict=True)
            if cell]
    return f"{cells[0]}: {'; '.join(rest)}" if cells[0] else "; ".join(rest)


def split_section(text: str, heading: str = "") -> list[Unit]:
    """Quotable units of one section, in book order; a heading that spells out an acronym
    ("VIO (Visual-Inertial Odometry)") is a unit too."""
    units: list[Unit] = []
    if heading and EXPANSION_RE.search(heading):
        units.append(Unit(clean_inline(heading), HEADING, 0))
    header: list[str] = []
    paragraph: list[str] = []
    block = 0
    lead_in = ""  # the previous line, when it ended in ':' (it may introduce a command)

    def flush() -> None:
        nonlocal block
        joined = clean_inline(" ".join(paragraph))
        paragraph.clear()
        if joined:
            block += 1
            units.extend(Unit(s, PROSE, block) for s in SENTENCE_END_RE.split(joined)
                         if quotable(s))

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if FENCE_RE.match(line):
            flush()
            end = next((j for j in range(i + 1, len(lines)) if FENCE_RE.match(lines[j])),
                       len(lines))
            body = [b.strip() for b in lines[i + 1:end]
                    if b.strip() and not b.strip().startswith("#")]
            if lead_in and 0 < len(body) <= MAX_COMMAND_LINES:
                block += 1
                units.append(Unit(f"{lead_in} {' && '.join(body)}", COMMAND, block))
            lead_in, i = "", end + 1
            continue
        stripped = line.strip()
        lead = clean_inline(stripped)
        lead_in = lead if lead.endswith(":") and len(lead.split()) <= 12 else ""
        if stripped.startswith("|"):
            flush()
            if TABLE_SEPARATOR_RE.match(stripped.strip("|")):
                pass
            elif not header:
                header = [clean_inline(c) for c in stripped.strip("|").split("|")]
            elif row := table_row(stripped, header):
                block += 0 if units and units[-1].kind == ROW else 1
                units.append(Unit(row, ROW, block))
        elif not stripped or HEADING_RE.match(line) or RULE_RE.match(line):
            flush()
            header = []
        elif ITEM_RE.match(line):
            flush()
            raw = ITEM_RE.sub("", line, count=1)
            item = clean_inline(raw)
            if link_share(raw) > 0.4:  # a reading-list entry
                i += 1
                continue
            block += 0 if units and units[-1].kind == ITEM else 1
            for part in SENTENCE_END_RE.split(item):  # an item may hold several sentences
                if quotable(part) or (len(part.split()) >= 2 and re.search(r"\d", part)):
                    units.append(Unit(part, ITEM, block))
        else:
            paragraph.append(stripped.lstrip("> "))
        i += 1
    flush()
    return _dedupe(units)


def _dedupe(units: list[Unit]) -> list[Unit]:
    seen: set[str] = set()
    out = []
    for unit in units:
        key = unit.text.lower()
        if key not in seen:
            seen.add(key)
            out.append(unit)
    return out
