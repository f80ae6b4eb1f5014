"""Citations read from the labels a model writes ([S1]) when its server has no citations feature
(any OpenAI-compatible one). Pure, no I/O.

The model is asked to end each claim with the label of the excerpt it comes from. A claim is the
text from the last sentence break before its labels up to them; it becomes a ReplyBlock whose
spans are the sentences of each cited excerpt that share the most of its content terms (at most
MAX_SPAN_SENTENCES), so the claim check (rag.answer.claims) holds it to the words it cites, as it
does Claude's. An excerpt sharing no term with the claim is cited whole, which the check reports;
a label naming no excerpt becomes a span of a document that does not exist, which it reports too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import re2

from rag.answer.claims import sentence_bounds
from rag.index.lexical import tokenize
from rag.providers.base import CitedSpan, ReplyBlock

# [S1], [s1], (S1), [S 1], [S1, S3], [S1; S3], [S1 and S3], [S1-S3], [Source S1], each with the
# spacing before it; labels side by side ("[S1][S2]", "[S1], [S2]") are read as one group.
LABEL = (r"[\[(]\s*(?:(?:sources?|excerpts?)\s*:?\s*)?"
         r"S\s*\d+(?:\s*(?:[,;&]|and|-|–|to)\s*S?\s*\d+)*\s*[\])]")
# google-re2: linear however long a run of spaces or an unclosed "[S" is
LABELS_RE = re2.compile(rf"(?i)\s*{LABEL}(?:[\s,;]*{LABEL})*")
ONE_LABEL_RE = re2.compile(rf"(?i){LABEL}")
LABEL_LEAD_RE = re2.compile(r"(?i)^[\[(]\s*(?:(?:sources?|excerpts?)\s*:?\s*)?")
NUMBER_RE = re2.compile(r"(?i)(\d+)(?:\s*(?:-|–|to)\s*S?\s*(\d+))?")
# a range wider than this is no range a model would mean ("[S1-S999]")
MAX_RANGE = 20
MAX_SPAN_SENTENCES = 3
# ", and derivative action damps motion [S2]": the punctuation and the conjunction lead in
CLAIM_START_RE = re.compile(r"^[\W_]*(?:(?:and|but|or|so|while|whereas)\s+(?=\w))?(?=\w)",
                            re.IGNORECASE)


def label_numbers(labels: str) -> list[int]:
    """The excerpt numbers a group of labels names, in order, each once: "[S1-S3], [S5]" ->
    [1, 2, 3, 5]."""
    numbers: list[int] = []
    for label in ONE_LABEL_RE.findall(labels):
        inner = LABEL_LEAD_RE.sub("", label)
        for m in NUMBER_RE.finditer(inner):
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            span = range(first, last + 1) if 0 <= last - first <= MAX_RANGE else (first, last)
            numbers.extend(span)
    return list(dict.fromkeys(numbers))


def split_claim(segment: str) -> tuple[str, str]:
    """(lead, claim): the claim is what follows the segment's last sentence break (a break right
    at its end, as in "... offset. [S1]", belongs to the claim), without leading punctuation."""
    body = segment.rstrip()
    cut = 0
    for start, _ in sentence_bounds(body):
        cut = start
    lead_in = CLAIM_START_RE.match(body[cut:])
    if lead_in is None:  # no word after the break: nothing is claimed
        return segment, ""
    cut += lead_in.end()
    return segment[:cut], segment[cut:]


def supporting_spans(claim: str, number: int, excerpts: Sequence[str]) -> tuple[CitedSpan, ...]:
    """The sentences of excerpt `number` (1-based) that share the most of the claim's terms."""
    index = number - 1
    if not 0 <= index < len(excerpts):
        return (CitedSpan(index, 0, 0, ""),)
    excerpt = excerpts[index]
    wanted = set(tokenize(claim))
    sentences = [(a, b, set(tokenize(excerpt[a:b]))) for a, b in sentence_bounds(excerpt)]
    chosen: list[tuple[int, int]] = []
    while wanted and len(chosen) < MAX_SPAN_SENTENCES:
        a, b, terms = max(sentences, key=lambda s: len(wanted & s[2]), default=(0, 0, set()))
        if not wanted & terms:
            break
        chosen.append((a, b))
        wanted -= terms
    if not chosen:
        return (CitedSpan(index, 0, len(excerpt), excerpt),)
    return tuple(CitedSpan(index, a, b, excerpt[a:b]) for a, b in sorted(chosen))


def read_labels(reply: str, excerpts: Sequence[str]) -> list[ReplyBlock]:
    """The reply as blocks: each labelled claim citing the sentences that support it, the text
    between them uncited; the labels themselves are left out (they are drawn from the spans)."""
    blocks: list[ReplyBlock] = []
    position = 0
    for group in LABELS_RE.finditer(reply):
        lead, claim = split_claim(reply[position:group.start()])
        if lead:
            blocks.append(ReplyBlock(lead))
        if claim.strip():  # a label after nothing (a reply that starts with one) cites nothing
            spans = tuple(span for n in label_numbers(group.group())
                          for span in supporting_spans(claim, n, excerpts))
            blocks.append(ReplyBlock(claim, spans))
        position = group.end()
    if position < len(reply):
        blocks.append(ReplyBlock(reply[position:]))
    return blocks
