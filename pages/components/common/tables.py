"""Tables behind the inspector and the audit explorer, as pandas frames the pages only display.

Nothing here scores anything: the numbers come from rag.retrieval.hybrid (Hit components) and
from the audit store; this module names, orders and compares them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import pandas as pd

from pages.components.common.citing import cited_name
from pages.components.common.format import plain_markdown
from pages.components.common.links import citation_href, reader_href
from rag.answer.citations import build_url, section_names
from rag.answer.citations import section_name as chunk_section_name
from rag.answer.guardrails import reason_label
from rag.audit.filters import AuditFilters
from rag.retrieval.parts import PART_WEIGHT
from rag.types import Chunk, Retrieval

CANDIDATE_COLUMNS = ("rank", "section", "chapter", "link", "stable", "dense", "bm25_raw", "bm25",
                     "terms", "authority", "recency", "part", "blended", "rerank", "rank_before",
                     "moved", "passed", "selected", "reason", "chunk_id")
MOVED_TEXT = {"in": "into top-k", "out": "out of top-k", "": ""}
REASON_TEXT = {"below_threshold": "below threshold", "duplicate_section": "duplicate section",
               "beyond_top_k": "beyond top-k", "": ""}
EXCERPT_CHARS = 140


def reason_text(code: str) -> str:
    """Why a candidate was left out, in words; a code this table does not know yet still reads
    as words (never "beyond_top_k")."""
    return REASON_TEXT.get(code, code.replace("_", " "))


def section_label(chunk: Chunk, with_chapter: bool = True,
                  names: Mapping[str, str] | None = None) -> str:
    """"Chapter › Section"; `names` (rag.answer.response.book_section_names) names a section
    that shares its title with another of its chapter with the heading it sits under."""
    if chunk.source != "book":
        return "Selected text"
    title = chunk_section_name(chunk, names) or chunk.chapter_title
    return f"{chunk.chapter_title} › {title}" if with_chapter else title


def _link(url: str, chunk, base_url: str) -> str:
    """The rendered href: the template URL, or the in-app reader when base_url is empty."""
    return reader_href(url, chunk.module_id, chunk.chapter_id, chunk.section_id, base_url)


def candidates_frame(retrieval: Retrieval, template: str, base_url: str,
                     names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every candidate with every score component, in blended order."""
    rows = [{
        "rank": h.rank, "section": section_label(h.chunk, with_chapter=False, names=names),
        "chapter": h.chunk.chapter_title if h.chunk.source == "book" else "",
        "link": _link(build_url(template, base_url, h.chunk), h.chunk, base_url) or None,
        "stable": h.chunk.stable and bool(h.chunk.section_id), "dense": h.dense,
        "bm25_raw": h.bm25_raw, "bm25": h.bm25, "terms": h.terms, "authority": h.authority,
        "recency": h.recency, "part": h.part, "blended": h.blended, "rerank": h.rerank,
        "rank_before": h.rank_before, "moved": MOVED_TEXT.get(h.moved, h.moved),
        "passed": h.passed, "selected": h.selected, "reason": reason_text(h.reason),
        "chunk_id": h.chunk.chunk_id,
    } for h in retrieval.candidates]
    return pd.DataFrame(rows, columns=list(CANDIDATE_COLUMNS))


def _short(text: str, limit: int = 48) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


SIGNAL_PARTS = ("terms", "authority", "recency")


def contributions_frame(retrieval: Retrieval, limit: int | None = None) -> pd.DataFrame:
    """The weighted parts of each candidate's blended score (best first), which add up to it:
    (1 - signal weights) x (dense weight x dense, BM25 weight x BM25), then each composite
    signal x its weight, then the numbered part's move (rag.retrieval.parts: PART_WEIGHT x the
    part score, negative for a section of another part)."""
    s = retrieval.settings
    weights = s.signal_weights
    share = 1.0 - sum(weights.values())
    hits = retrieval.candidates[:limit] if limit else retrieval.candidates
    return pd.DataFrame([{
        "label": _short(f"#{h.rank} {section_label(h.chunk, with_chapter=False)}"),
        "rank": h.rank,
        "dense_part": round(share * s.w_dense * h.dense, 6),
        "bm25_part": round(share * s.w_bm25 * h.bm25, 6),
        **{f"{name}_part": round(weights.get(name, 0.0) * getattr(h, name), 6)
           for name in SIGNAL_PARTS},
        "part_part": round(PART_WEIGHT * h.part, 6),
        "blended": h.blended,
        "status": "in top-k" if h.selected else ("passed" if h.passed else "below threshold"),
    } for h in hits], columns=["label", "rank", "dense_part", "bm25_part",
                               *(f"{n}_part" for n in SIGNAL_PARTS), "part_part", "blended",
                               "status"])


def _change(rank_a: int | None, rank_b: int | None, top_a: bool, top_b: bool) -> str:
    if top_b and not top_a:
        return "new"
    if top_a and not top_b:
        return "dropped"
    if rank_a is None or rank_b is None or rank_a == rank_b:
        return "="
    return f"↑{rank_a - rank_b}" if rank_b < rank_a else f"↓{rank_b - rank_a}"


def rank_changes(before: Retrieval, after: Retrieval) -> pd.DataFrame:
    """`after`'s candidates with how each moved against `before`: ↑n / ↓n / = by rank, "new" when
    it entered the final top-k, "dropped" when it left it. Chunks only `before` had come last."""
    a = {h.chunk.chunk_id: h for h in before.candidates}
    b = {h.chunk.chunk_id: h for h in after.candidates}
    rows = []
    for cid in [*b, *[c for c in a if c not in b]]:
        ha, hb = a.get(cid), b.get(cid)
        hit = hb or ha
        rows.append({
            "rank": hb.rank if hb else None, "change": _change(
                ha.rank if ha else None, hb.rank if hb else None,
                bool(ha and ha.selected), bool(hb and hb.selected)),
            "section": section_label(hit.chunk, with_chapter=False),
            "blended": hb.blended if hb else None,
            "selected": bool(hb and hb.selected), "rank_before": ha.rank if ha else None,
            "blended_before": ha.blended if ha else None, "chunk_id": cid})
    return pd.DataFrame(rows, columns=["rank", "change", "section", "blended", "selected",
                                       "rank_before", "blended_before", "chunk_id"])


def quote_frame(quotes: Sequence[str], supports: Sequence[float],
                whole: Sequence[bool] = (), around: Sequence[bool] = ()) -> pd.DataFrame:
    """The units an extractive answer quoted, with each one's probability of holding the answer,
    whether it is a short section read whole and whether it is read around the quotes (older
    records say nothing: no)."""
    def flags(values: Sequence[bool]) -> list[bool]:
        return list(values) if len(values) == len(quotes) else [False] * len(quotes)

    return pd.DataFrame({"#": range(1, len(quotes) + 1), "quoted unit": list(quotes),
                         "probability": list(supports), "whole section": flags(whole),
                         "around": flags(around)})


def hit_name(hit: dict, names: Mapping[str, str] | None = None) -> str:
    """A recorded hit as readers know it: "Chapter › Section" (`names` as section_label's), or
    the pasted passage."""
    if hit.get("source", "book") != "book":
        return "Selected text"
    key = f"{hit.get('module_id', '')}/{hit.get('chapter_id', '')}#{hit.get('section_id', '')}"
    return cited_name({**hit, "section_title": names[key]} if names and key in names else hit)


def cited_numbers(hit: dict, citations: Sequence[dict]) -> list[int]:
    """The answer's source numbers ([1], [2], ...) that cite this hit's chunk."""
    return [n for n, c in enumerate(citations, start=1)
            if c.get("chunk_id") and c.get("chunk_id") == hit.get("chunk_id")]


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a chunk as plain words on one line (markdown markers removed)."""
    words = " ".join(plain_markdown(text)[0].split())
    return words if len(words) <= limit else words[:limit - 1].rstrip() + "…"


def turn_hits_frame(hits: Sequence[dict], citations: Sequence[dict] = (),
                    texts: dict[str, str] | None = None,
                    names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The hits a chat answer drew on (a record's `chunks_returned`): whether the answer cited
    each one (and as which source), its scores and the start of its text (`texts`: chunk id ->
    text, where known)."""
    texts = texts or {}
    rows = []
    for i, h in enumerate(hits, start=1):
        numbers = cited_numbers(h, citations)
        rows.append({"#": i, "section": hit_name(h, names),
                     "cited": "yes " + ", ".join(f"[{n}]" for n in numbers) if numbers else "no",
                     "dense": h.get("dense"), "BM25": h.get("bm25"),
                     "term match": h.get("terms"), "authority": h.get("authority"),
                     "recency": h.get("recency"), "blended": h.get("blended"),
                     "re-rank": h.get("rerank"),
                     "text": excerpt(texts.get(h.get("chunk_id", ""), ""))})
    frame = pd.DataFrame(rows, columns=["#", "section", "cited", "dense", "BM25", "term match",
                                        "authority", "recency", "blended", "re-rank", "text"])
    # a component shows once it counted for some hit (old records have none of them)
    empty = [c for c in ("term match", "authority", "recency", "re-rank")
             if not frame[c].fillna(0).astype(float).any()]
    return frame.drop(columns=empty)


# -- audit explorer -----------------------------------------------------------------------------

def build_filters(days: tuple[date, date] | None = None, modes: Sequence[str] = (),
                  statuses: Sequence[str] = (), confidence: tuple[float, float] = (0.0, 1.0),
                  reason_codes: Sequence[str] = (), providers: Sequence[str] = (),
                  text: str = "") -> AuditFilters:
    """Widget values -> AuditFilters: whole days in UTC (end day included), and a confidence
    range of 0-1 means no confidence filter (so error rows, which have none, still show)."""
    start = end = None
    if days:
        first, last = (days[0], days[-1])
        start = datetime.combine(first, time.min, UTC)
        end = datetime.combine(last + timedelta(days=1), time.min, UTC)
    low, high = confidence
    return AuditFilters(
        start=start, end=end, modes=tuple(modes), statuses=tuple(statuses),
        min_confidence=low if low > 0 else None, max_confidence=high if high < 1 else None,
        reason_codes=tuple(reason_codes), providers=tuple(providers), text=text.strip())


def kpi_values(stats: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, value) for the KPI row."""
    def pct(key: str) -> str:
        return f"{100 * float(stats.get(key) or 0):.0f} %" if stats.get("total") else "–"

    p95 = stats.get("latency_p95_ms")
    return [("Questions", f"{int(stats.get('total') or 0):,}"), ("Answer rate", pct("answer_rate")),
            ("Refusal rate", pct("refusal_rate")), ("Error rate", pct("error_rate")),
            ("Latency p95", "–" if p95 is None else f"{float(p95) / 1000:.2f} s")]


def section_name(key: str, labels: dict[str, str], with_chapter: bool = True) -> str:
    """A cited-section key as readers know it; pasted selections have no book section."""
    if key.split("#")[0].endswith("/selection") or key.startswith("selection#"):
        return "Pasted selection"
    label = labels.get(key, key)
    return label if with_chapter else label.split(" › ")[-1]


def book_sections(chunks: Sequence[Chunk]) -> dict[str, str]:
    """`module/chapter#section` -> "Chapter › Section", in book order."""
    out: dict[str, str] = {}
    names = section_names(chunks)
    for c in chunks:
        if c.source == "book":
            out.setdefault(c.section_key, section_label(c, names=names))
    return out


def record_hits_frame(record: dict[str, Any]) -> pd.DataFrame:
    """The hits an audit row recorded, with their scores."""
    rows = record.get("chunks_returned") or []
    return pd.DataFrame([{
        "rank": h.get("rank"), "section": h.get("section_title", ""),
        "where": f"{h.get('chapter_id', '')}#{h.get('section_id', '')}",
        "source": h.get("source", ""), "dense": h.get("dense"), "bm25_raw": h.get("bm25_raw"),
        "bm25": h.get("bm25"), "terms": h.get("terms"), "blended": h.get("blended"),
        "rerank": h.get("rerank"), "passed": h.get("passed"),
    } for h in rows], columns=["rank", "section", "where", "source", "dense", "bm25_raw", "bm25",
                               "terms", "blended", "rerank", "passed"])


def page_text(citation: dict[str, Any]) -> str:
    """ "42", "42–43" (a PDF excerpt over a page turn), or "" when the book has no pages."""
    first, last = citation.get("page"), citation.get("page_end")
    if not first:
        return ""
    return f"{first}–{last}" if last and last != first else str(first)


def record_citations_frame(record: dict[str, Any], base_url: str | None = None
                           ) -> pd.DataFrame:
    """The recorded citations; base_url given: `url` is the rendered href (see reader_href)."""
    rows = record.get("citations") or []
    return pd.DataFrame([{"marker": c.get("marker"), "section": c.get("section_title"),
                          "url": citation_href(c, base_url) or None,
                          "page": page_text(c),
                          "stable": c.get("stable"), "score": c.get("confidence"),
                          "excerpt": c.get("excerpt")} for c in rows],
                        columns=["marker", "section", "url", "page", "stable", "score", "excerpt"])


def record_verdicts_frame(record: dict[str, Any]) -> pd.DataFrame:
    """The guardrail decisions, the reason in words beside its code."""
    rows = record.get("guardrail_actions") or []
    return pd.DataFrame([{**{k: v.get(k) for k in ("guardrail", "reason_code", "action",
                                                  "message")},
                          "reason": reason_label(v.get("reason_code") or "unknown")}
                         for v in rows],
                        columns=["guardrail", "reason", "reason_code", "action", "message"])


def stage_latency_frame(record: dict[str, Any]) -> pd.DataFrame:
    stages = record.get("stage_latency_ms") or {}
    return pd.DataFrame([{"stage": k, "ms": v} for k, v in stages.items()],
                        columns=["stage", "ms"])
