"""A list's quotable units: an item under its label, short siblings as one unit, labelled items
also as an overview (list_units, used by rag.book.sentences)."""

from __future__ import annotations

import re

from rag.book.inline import MAX_WORDS, quotable, says_something
from rag.book.segment import sentences_of

SHORT_ITEM = 6  # words: siblings all this short are one unit ("Advantages: Low cost; ...")
MIN_OVERVIEW = 3  # labelled items ("- **Friction cones**: ...") that also make an overview unit
LABEL_WORDS = 4  # a label this short leads each longer item under it ("Limitations")
OWN_LABEL_RE = re.compile(r"^([^:;.]{1,40}):\s")  # "GPU: NVIDIA RTX ..." says what it is about


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
            out.extend((n, part) for part in split_item(t, name))
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


def split_item(item: str, name: str) -> list[str]:
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
