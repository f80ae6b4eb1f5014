"""Pure formatting for the pages: query terms and quoted sentences highlighted as safe HTML,
badges and notices as st.markdown text (answers with their citation links: citing.py)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence

from rag.answer.guardrails import reason_label
from rag.answer.record import record_notices
from rag.index.lexical import tokenize
from rag.notices import INFO, notice_label
from rag.types import MODE_LABELS, MODE_NAMES

WORD_RE = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?", re.IGNORECASE)
LEVEL_COLORS = {"high": "green", "medium": "orange", "low": "red"}
ACTION_WORDS = {"override": "replaced the answer", "warn": "added a caveat", "flag": "flagged"}
STATUS_BADGES = {"partial": ("orange", "Partial answer"), "refused": ("red", "Refused"),
                 "error": ("red", "Error")}


# -- highlighting (safe HTML: every piece of text is escaped) -----------------------------------

def _escape(text: str) -> str:
    # One HTML block with no blank lines, so markdown never re-parses the text; `$` would
    # start LaTeX in st.markdown.
    return html.escape(text).replace("$", "&#36;").replace("\n", "<br>")


def _wrap(text: str, spans: list[tuple[int, int]], tag: str = "mark") -> str:
    out, pos = [], 0
    for start, end in sorted(spans):
        if start < pos:
            start = pos
        if start >= end:
            continue
        out += [_escape(text[pos:start]), f"<{tag}>", _escape(text[start:end]), f"</{tag}>"]
        pos = end
    out.append(_escape(text[pos:]))
    return "".join(out)


def term_spans(text: str, query: str) -> list[tuple[int, int]]:
    """Spans of words whose BM25 stem is one of the query's stems (stop words never match)."""
    stems = set(tokenize(query))
    if not stems:
        return []
    cache: dict[str, bool] = {}
    spans = []
    for m in WORD_RE.finditer(text):
        word = m.group().lower()
        if word not in cache:
            cache[word] = bool(set(tokenize(word)) & stems)
        if cache[word]:
            spans.append(m.span())
    return spans


def highlight_terms(text: str, query: str) -> str:
    """The text as safe HTML with the query's terms (matched by stem) in <mark>."""
    return _wrap(text, term_spans(text, query))


def sentence_spans(text: str, quotes: Sequence[str]) -> list[tuple[int, int]]:
    """Where each quoted sentence sits in the text, whitespace and bold markers ignored."""
    spans = []
    for quote in quotes:
        words = quote.split()
        if not words:
            continue
        pattern = r"(?:\s|\*\*|__)+".join(re.escape(w) for w in words)
        if m := re.search(pattern, text):
            spans.append(m.span())
    return spans


def highlight_sentences(text: str, quotes: Sequence[str]) -> str:
    """The passage as safe HTML with the sentences the answer used in <mark>."""
    return _wrap(text, sentence_spans(text, quotes))


# -- book markdown as safe HTML (the inspector's and "Why this answer"'s text views) ------------

FENCE_RE = re.compile(r"^\s*(```|~~~)")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)(?:\s*\{#[^}]*\})?\s*$")
INLINE_RE = re.compile(
    r"!\[(?P<alt>[^\]]*)\]\([^)]*\)"  # image: its alt text
    r"|\[(?P<link>[^\]]+)\]\([^)]*\)"  # link: its text
    r"|`(?P<code>[^`\n]+)`"
    r"|\*\*(?P<b1>[^*\n]+?)\*\*|(?<!\w)__(?P<b2>[^_\n]+?)__(?!\w)"
    r"|(?<![\w*])\*(?P<i1>[^*\s][^*\n]*?)\*(?![\w*])|(?<!\w)_(?P<i2>[^_\s][^_\n]*?)_(?!\w)")
INLINE_TAGS = {"code": "code", "b1": "strong", "b2": "strong", "i1": "em", "i2": "em"}


def _inline(line: str, offset: int, styles: list[tuple[int, int, str]]) -> str:
    """The line without its inline markers; styles gets (start, end, tag) in plain offsets."""
    out, pos = [], 0
    for m in INLINE_RE.finditer(line):
        name = m.lastgroup or ""
        out.append(line[pos:m.start()])
        start = offset + sum(map(len, out))
        out.append(m.group(name))
        if name in INLINE_TAGS:
            styles.append((start, start + len(m.group(name)), INLINE_TAGS[name]))
        pos = m.end()
    out.append(line[pos:])
    return "".join(out)


def plain_markdown(text: str) -> tuple[str, list[tuple[int, int, str]]]:
    """Markdown as the words a reader sees, with where the styling was: headings and bold
    become <strong>, emphasis <em>, inline and fenced code <code>; links keep their text."""
    lines, styles, pos, fenced = [], [], 0, False
    for raw in text.split("\n"):
        if FENCE_RE.match(raw):
            fenced = not fenced
            continue
        if fenced:
            line = raw
            styles.append((pos, pos + len(line), "code"))
        elif heading := HEADING_RE.match(raw):
            line = _inline(heading.group(2), pos, styles)
            styles.append((pos, pos + len(line), "strong"))
        else:
            line = _inline(raw, pos, styles)
        lines.append(line)
        pos += len(line) + 1
    return "\n".join(lines), styles


def markdown_html(text: str, query: str = "", quotes: Sequence[str] = ()) -> str:
    """Book markdown as safe HTML: no raw `**` or `#`, the query's terms and the quoted
    sentences in <mark>. Every piece of text is escaped."""
    plain, styles = plain_markdown(text)
    marks = [(a, b, "mark") for a, b in [*term_spans(plain, query), *sentence_spans(plain, quotes)]]
    ranges = styles + marks
    cuts = sorted({0, len(plain), *[a for a, _, _ in ranges], *[b for _, b, _ in ranges]})
    pieces: list[tuple[tuple[str, ...], str]] = []  # (tags, text), neighbours merged
    for start, end in zip(cuts, cuts[1:], strict=False):
        tags = tuple(sorted({tag for a, b, tag in ranges if a <= start and end <= b},
                            key=("code", "strong", "em", "mark").index))
        if pieces and pieces[-1][0] == tags:
            pieces[-1] = (tags, pieces[-1][1] + plain[start:end])
        else:
            pieces.append((tags, plain[start:end]))
    out = []
    for tags, piece in pieces:
        body = _escape(piece)
        if "code" in tags:  # keep a code line's indentation
            body = body.replace("  ", "&nbsp; ")
        out.append("".join(f"<{t}>" for t in tags) + body
                   + "".join(f"</{t}>" for t in reversed(tags)))
    return "".join(out)


# -- answer formatting (markdown for st.markdown) -----------------------------------------------

def drafted(record: dict) -> bool:
    """Whether an answer was drafted for the record (its stage latencies name a synthesis);
    True when they are unknown, as in a record written before stage latencies were kept."""
    stages = record.get("stage_latency_ms")
    if isinstance(stages, str):  # a JSON column read back from the audit log
        try:
            stages = json.loads(stages)
        except ValueError:
            return True
    return not (isinstance(stages, dict) and stages) or "synthesis" in stages


def badges_markdown(record: dict) -> str:
    """Mode actually used, fallback, confidence and status of an answer record as badges."""
    out = []
    if record.get("status") == "error":
        return ":red-badge[:material/error: Error" + (
            f" in {record['error_stage']}]" if record.get("error_stage") else "]")
    used = record.get("mode_used") or "full-book"
    icon = ":material/menu_book:" if used == "full-book" else ":material/format_quote:"
    out.append(f":blue-badge[{icon} {MODE_LABELS.get(used, used)}]")
    if record.get("fallback_reason"):
        asked = MODE_NAMES.get(record.get("source_mode") or "", record.get("source_mode") or "")
        why = notice_label(record["fallback_reason"])
        out.append(f":orange-badge[:material/swap_horiz: Asked for {asked.lower()}: {why}]")
    level, score = record.get("confidence_level") or "low", record.get("confidence_score")
    if record.get("status") == "refused" and not drafted(record):
        # refused before anything was drafted (a code request, current information, a name the
        # book never mentions, nothing above the threshold): the confidence is retrieval's score
        # blended with a default for the missing draft, and "Confidence 0.72 · medium" beside
        # "Refused" reads as doubt in the refusal; retrieval's own score is what there is
        retrieval = record.get("retrieval_confidence")
        retrieval = score if retrieval is None else retrieval
        out.append(f":gray-badge[Retrieval {float(retrieval or 0.0):.2f}]")
    else:
        out.append(f":{LEVEL_COLORS.get(level, 'gray')}-badge[Confidence "
                   f"{float(score or 0.0):.2f} · {level}]")
    if record.get("status") in STATUS_BADGES:
        color, text = STATUS_BADGES[record["status"]]
        out.append(f":{color}-badge[{text}]")
    total = record.get("total_latency_ms")
    if total is not None:
        out.append(f":gray-badge[{float(total) / 1000:.2f} s]")
    return " ".join(out)


def notice_lines(record: dict) -> list[tuple[str, str]]:
    """(kind, message) for the notices under an answer: "warning" when the question was
    answered differently than asked or not logged, else "info" (decided by each notice's code)."""
    return [("info" if n.kind == INFO else "warning", n.message)
            for n in record_notices(record)]


def verdict_caption(record: dict) -> str:
    """One line naming, in words, each guardrail that acted, e.g. "Guardrails: hedged wording
    (added a caveat)"; "" when none did."""
    parts = [f"{reason_label(v.get('reason_code') or 'unknown')} "
             f"({ACTION_WORDS.get(v.get('action', ''), 'acted')})"
             for v in record.get("guardrail_actions") or []]
    return ("Guardrails: " + " · ".join(parts)) if parts else ""


CODE_WORDS = {"max_f1": "max F1", "max_recall_at_far": "max recall@k under a false-answer limit",
              "recall_at_k": "recall@k", "hit_at_k": "hit@k", "ndcg_at_k": "nDCG@k",
              "false_answer_rate": "false-answer rate", "answer_rate": "answer rate"}
CODE_RE = re.compile(r"(?<![\w/.\\-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w/\\-]|\.\w)")


def words(text: str) -> str:
    """Internal snake_case names in a sentence as words ("recall_at_k 0.98" -> "recall@k 0.98");
    file names and paths are left alone."""
    return CODE_RE.sub(lambda m: CODE_WORDS.get(m.group(), m.group().replace("_", " ")), text)


def dash(value, fmt: str = "{}") -> str:
    """A value for display: "—" for a missing one (None, NaN), never the word None."""
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    return fmt.format(value)
