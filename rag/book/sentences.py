"""A section's text as the units an extractive answer may quote: prose sentences, list items,
table rows and one-line commands, cleaned of Markdown (links keep their text, images and HTML
go). A list item keeps the label it sits under, short items are quoted together and labelled
items also make an overview (list_units), so a quoted item still says what it is about.

Ingest embeds these units and the answerer scores them, so both see exactly the same text.
Headings, quiz questions, lead-ins ending in ':' (unless the section ends on one: what it
introduces sits under the next heading) and code are not quotable units, but a short command
right after a lead-in ("**Solution**: ```source setup.bash```") is, as one unit, and so is each
commented step of a shell block ("# Retry build" over "colcon build --parallel-workers 1"):
technical books put the fix there (five key facts of data/eval/physical-ai-heldout.yaml were in
no unit before). A code span keeps what it holds (`ros__parameters`, a URL to paste).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROSE, ITEM, COMMAND, ROW, HEADING = "prose", "item", "command", "row", "heading"
MIN_WORDS, MAX_WORDS = 4, 80
MAX_COMMAND_LINES = 2  # a longer block is a program, not an answer
MAX_STEP_LINES = 4  # commands under one comment of a shell block (commented_steps)
SHELL_FENCES = ("", "bash", "sh", "shell", "console", "zsh")  # "": a fence with no language
# Three or four lines of shell or configuration this short after a lead-in are a snippet to
# paste ("Add dependencies to package.xml: <exec_depend>launch</exec_depend>; ..."); as many
# lines of Python are a program.
SNIPPET_FENCES, SNIPPET_CHARS = (*SHELL_FENCES, "xml", "yaml", "yml", "toml", "ini", "text"), 160
CODE_LIKE_RE = re.compile(r"[=$;{}]|--|\w\(|^\S+\s*$|^(?:sudo|export|source|cd|ros2|colcon)\b")
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
IMAGE_RE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
LINK_RE = re.compile(r"\[([^\]]*)\]\([^)]*\)")
URL_RE = re.compile(r"<?https?://\S+>?")
HTML_RE = re.compile(r"</?[a-zA-Z][^>]*>")
# `__` inside a word is part of it (CommonMark): "ros__parameters" keeps both
EMPHASIS_RE = re.compile(r"\*\*|(?<![^\W_])__|__(?![^\W_])|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])")
CODE_SPAN_RE = re.compile(r"`([^`\n]+)`")
# "**Label:** value" or "**Label**: value"
FIELD_RE = re.compile(r"^(?:\*\*|__)[^*_]{1,40}?(?::(?:\*\*|__)|(?:\*\*|__):)\s")
BOLD_LINE_RE = re.compile(r"^(\*\*|__)[^*_].*\1:?$")  # "**Tested with ROS 2 Humble**"
OWN_LABEL_RE = re.compile(r"^([^:;.]{1,40}):\s")  # "GPU: NVIDIA RTX ..." says what it is about
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
    """Markdown marks out, link text kept, whitespace collapsed. A code span keeps what it
    holds (a URL to paste, `<exec_depend>`, `ros__parameters`); only its backticks go."""
    text = LINK_RE.sub(r"\1", IMAGE_RE.sub("", text))
    parts = CODE_SPAN_RE.split(text)  # even: prose, odd: code
    text = "".join(part if k % 2 else EMPHASIS_RE.sub("", HTML_RE.sub("", URL_RE.sub("", part)))
                   for k, part in enumerate(parts)).replace("`", "")
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


def split_section(text: str, heading: str = "", labelled: bool = True) -> list[Unit]:
    """Quotable units of one section, in book order; a heading that spells out an acronym
    ("VIO (Visual-Inertial Odometry)") is a unit too. List items carry the label they sit under
    (list_units); with `labelled` False each item is a unit as written (the starter questions
    phrase one item at a time)."""
    units: list[Unit] = []
    if heading and EXPANSION_RE.search(heading):
        units.append(Unit(clean_inline(heading), HEADING, 0))
    header: list[str] = []
    paragraph: list[str] = []
    items: list[tuple[int, str]] = []  # the open list: (indent, cleaned item text)
    block = 0
    lead_in = ""  # the previous line, when it ended in ':' (it may introduce a command)
    label = ""  # the last paragraph's closing sentence, when it ends in ':' (it heads a list)
    title = clean_inline(heading)  # the heading (or bold line) right above a list

    def flush() -> None:
        nonlocal block, label, title
        joined = clean_inline(" ".join(paragraph))
        bold = len(paragraph) == 1 and BOLD_LINE_RE.match(paragraph[0])
        paragraph.clear()
        if joined:
            block += 1
            title = joined.rstrip(":") if bold else ""  # a bold line heads what follows
            sentences = SENTENCE_END_RE.split(joined)
            units.extend(Unit(s, PROSE, block) for s in sentences if quotable(s))
            label = sentences[-1] if sentences[-1].endswith(":") else ""

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
            body = [b.strip() for b in lines[i + 1:end]
                    if b.strip() and not b.strip().startswith("#")]
            language = (FENCE_RE.sub("", line).split() or [""])[0].lower()
            shell = language in SHELL_FENCES
            if lead_in and 0 < len(body) <= MAX_STEP_LINES and (
                    len(body) <= MAX_COMMAND_LINES or language in SNIPPET_FENCES and
                    sum(map(len, body)) <= SNIPPET_CHARS):
                block += 1  # "Add dependencies to package.xml: <exec_depend>launch</...>; ..."
                units.append(Unit(f"{lead_in} {(' && ' if shell else '; ').join(body)}",
                                  COMMAND, block))
            elif shell:
                steps = commented_steps(lines[i + 1:end])
                block += bool(steps)
                units.extend(Unit(step, COMMAND, block) for step in steps)
            lead_in, label, title, i = "", "", "", end + 1
            continue
        stripped = line.strip()
        lead = clean_inline(ITEM_RE.sub("", stripped, count=1))  # "2. Check it:" -> "Check it:"
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
            title = "" if RULE_RE.match(line) else clean_inline(line.lstrip(" #"))
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
    if label and quotable(label[:-1]):  # the text ends on a lead-in: what it introduces is
        units.append(Unit(label, PROSE, block))  # under the next heading
    return _dedupe(units)


def commented_steps(lines: list[str]) -> list[str]:
    """A shell block's commented steps: a comment and the commands right under it are one unit
    ("Build with symbolic links (faster iteration): colcon build --symlink-install"); more than
    MAX_STEP_LINES commands are a script, not an answer, and a comment with no command under it
    is a step of its own when it reads as prose ("If not found, try a different USB port")."""
    steps: list[str] = []
    comment, commands = "", []
    for raw in [*lines, ""]:
        line = raw.strip()
        if line.startswith("#") or not line:
            if comment and 0 < len(commands) <= MAX_STEP_LINES:
                steps.append(f"{comment}: {' && '.join(commands)}")
            elif comment and not commands and not CODE_LIKE_RE.search(comment):
                steps.append(comment)
            shebang = line.startswith("#!")
            comment, commands = ("" if shebang else clean_inline(line.lstrip("#")), [])
        else:
            commands.append(line.removeprefix("$ "))
    return [step for step in steps if quotable(step)]  # 4-80 words, not a question


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
        if not group:
            continue
        name = (items[parent][1] if parent >= 0 else lead).rstrip(":").strip()
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
        for n, t in zip(group, texts, strict=True):
            out.extend((n, part) for part in _item_parts(t, name))
    return [t for _, t in sorted(out, key=lambda o: o[0])]


def _item_parts(item: str, name: str) -> list[str]:
    """An item's sentences (an item may hold several), the first led by a short label unless it
    has its own ("GPU: ...")."""
    parts = []
    for k, part in enumerate(SENTENCE_END_RE.split(item)):
        if k == 0 and name and len(name.split()) <= LABEL_WORDS and not OWN_LABEL_RE.match(part) \
                and not part.lower().startswith(name.lower()):
            part = f"{name}: {part}"
        if quotable(part) or (len(part.split()) >= 2 and re.search(r"\d", part) and
                              not part.endswith((":", "?"))):
            parts.append(part)
    return parts


def _dedupe(units: list[Unit]) -> list[Unit]:
    seen: set[str] = set()
    out = []
    for unit in units:
        key = unit.text.lower()
        if key not in seen:
            seen.add(key)
            out.append(unit)
    return out
