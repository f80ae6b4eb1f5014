"""One answer, one record: the Response as the JSON-ready dict that the chat history keeps and the
audit log stores (its keys are the audit columns), and the Response read back from it.

Keys an audit row adds (log_id, session_id, client_id, app_version) are the log's, not the
answer's. What an offline answer was made from (EVIDENCE_KEYS: answer_quotes, answer_supports,
answer_runner_up, answer_unquoted, answer_coverage, answer_asked, answer_more, answer_unstated,
answer_led_by, answer_whole, answer_around) is kept twice: as keys of its own for the browser
history, and together in `answer_evidence`, the audit column; clear_selection stays in the
browser history only. The book (`book_id`, `book_title`) comes from the settings snapshot and is
also put on each citation, so a link built from the citation alone knows which book it points
into.
"""

from __future__ import annotations

import uuid
from dataclasses import MISSING, asdict, fields
from datetime import UTC, datetime
from typing import Any

from rag.notices import Notice, notice_from
from rag.retrieval.hybrid import pool_to_record
from rag.types import MODE_LABELS, Citation, Confidence, Response, Verdict

# What the browser history leaves out: large, and shown only by the audit explorer.
HEAVY_KEYS = ("candidate_pool", "llm_prompt", "llm_response", "settings", "validation",
              "answer_evidence")
EVIDENCE_KEYS = ("answer_quotes", "answer_supports", "answer_runner_up", "answer_unquoted",
                 "answer_coverage", "answer_asked", "answer_more", "answer_unstated",
                 "answer_led_by", "answer_whole", "answer_around")
# each citation field, with what it reads as when an older row lacks it: its default, else None
CITATION_DEFAULTS = {f.name: None if f.default is MISSING else f.default for f in fields(Citation)}


def utc_iso(value: Any = None) -> str:
    """An ISO-8601 UTC timestamp without offset (the audit column is UTC by convention)."""
    dt = value if isinstance(value, datetime) else None
    if dt is None and value:
        try:
            dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            dt = None
    dt = dt or datetime.now(UTC)
    if dt.tzinfo is not None:
        dt = dt.astimezone(UTC).replace(tzinfo=None)
    return dt.isoformat(timespec="microseconds")


def _number(value: Any, cast: type = float) -> Any:
    try:
        return None if value is None else cast(value)
    except (TypeError, ValueError):
        return None


def _retrieval_fields(response: Response, meta: dict[str, Any]) -> dict[str, Any]:
    r = response.retrieval
    latency = meta.get("latency_ms") if isinstance(meta.get("latency_ms"), dict) else {}
    return {
        "retrieval_query": str(meta.get("retrieval_query") or (r.query if r else "") or ""),
        "chunks_retrieved_count": _number(meta.get("chunks_retrieved",
                                                   len(r.hits) if r else 0), int),
        "chunks_used_count": _number(meta.get("chunks_used", len(response.citations)), int),
        "chunks_returned": [h.to_dict(with_text=False) for h in r.hits] if r else [],
        "candidate_pool": pool_to_record(r) if r else None,
        "retrieval_latency_ms": _number(meta.get("retrieval_latency_ms",
                                                 latency.get("retrieval"))),
        "synthesis_latency_ms": _number(meta.get("synthesis_latency_ms",
                                                 latency.get("synthesis"))),
        "total_latency_ms": _number(meta.get("total_latency_ms", latency.get("total"))),
        "stage_latency_ms": latency,
    }


def _book_fields(response: Response) -> dict[str, str | None]:
    """The book the answer came from (None for a response made without settings)."""
    settings = response.settings if isinstance(response.settings, dict) else {}
    return {key: str(settings[key]) if settings.get(key) else None
            for key in ("book_id", "book_title")}


def _citation(citation: Citation, book_id: str | None) -> dict[str, Any]:
    return {**asdict(citation), "book_id": book_id} if book_id else asdict(citation)


def _answer_fields(response: Response, meta: dict[str, Any],
                   book_id: str | None) -> dict[str, Any]:
    d, c = response.draft, response.confidence
    sections = [f"{x.module_id}/{x.chapter_id}#{x.section_id}" for x in response.citations]
    out = {
        "llm_provider": str(meta.get("llm_provider") or (d.provider if d else "") or ""),
        "llm_model": str(meta.get("llm_model") or (d.model if d else "") or ""),
        "llm_prompt": d.prompt if d else "", "llm_response": d.raw_response if d else "",
        "answer_text": response.answer or "",
        "answer_quotes": list(d.quotes) if d else [],
        "answer_supports": [round(float(x), 4) for x in d.supports] if d else [],
        "answer_runner_up": _number(d.runner_up) if d and d.runner_up is not None else None,
        "answer_unquoted": _number(d.unquoted) if d and d.unquoted is not None else None,
        "answer_coverage": _number(d.coverage) if d and d.coverage is not None else None,
        "answer_asked": d.asked if d else None,
        "answer_more": [{**m, "book_id": book_id} if book_id else m
                        for m in meta.get("more_from_book") or []],
        "answer_unstated": list(d.unstated) if d else [],
        "answer_led_by": d.led_by if d else "",
        "answer_whole": list(d.whole) if d else [],
        "answer_around": list(d.around) if d else [],
        "confidence_score": _number(c.score), "confidence_level": c.level,
        "retrieval_confidence": _number(c.retrieval),
        "generation_confidence": _number(c.generation),
        "citations": [_citation(x, book_id) for x in response.citations],
        "cited_sections": list(dict.fromkeys(sections)),
        "guardrail_actions": [asdict(v) for v in response.verdicts],
        "reason_codes": [v.reason_code for v in response.verdicts],
    }
    return out | {"answer_evidence": {k: out[k] for k in EVIDENCE_KEYS}}


def to_record(response: Response) -> dict[str, Any]:
    """The answer as one JSON-ready record; tolerant of error Responses with parts missing."""
    meta = response.metadata if isinstance(response.metadata, dict) else {}
    question = meta.get("question") or (response.retrieval.query if response.retrieval else "")
    notices = [notice_from(n).to_dict() for n in meta.get("notices") or []]
    book = _book_fields(response)
    return {
        "query_id": str(meta.get("query_id") or uuid.uuid4()),
        "answer_id": str(meta.get("answer_id") or uuid.uuid4()),
        "timestamp": utc_iso(meta.get("timestamp")), "user_query_text": str(question or ""),
        "source_mode": meta.get("mode"), "mode_used": meta.get("mode_used"),
        "fallback_reason": meta.get("fallback_reason"),
        "clear_selection": bool(meta.get("clear_selection")),
        "query_type": meta.get("query_type") or None,
        **_retrieval_fields(response, meta),
        **_answer_fields(response, meta, book["book_id"]),
        "validation": response.validation or {}, "notices": list({
            n["code"] + n["message"]: n for n in notices}.values()),
        "status": response.status, "success": response.status in ("success", "partial"),
        "error_stage": response.error_stage or "", "error_message": response.error_message or "",
        "settings": response.settings or {}, **book,
    }


def history_record(response: Response) -> dict[str, Any]:
    """The record without what only the audit explorer shows, for the browser's history."""
    return {k: v for k, v in to_record(response).items() if k not in HEAVY_KEYS}


def record_notices(record: dict[str, Any]) -> list[Notice]:
    return [notice_from(n) for n in record.get("notices") or []]


def from_record(record: dict[str, Any]) -> Response:
    """The Response a record was made from, without its retrieval and draft (a record keeps the
    hits' scores, not the chunks' texts)."""
    mode_used = record.get("mode_used")
    metadata = {
        "query_id": record.get("query_id", ""), "answer_id": record.get("answer_id", ""),
        "timestamp": record.get("timestamp"), "question": record.get("user_query_text", ""),
        "mode": record.get("source_mode"), "mode_used": mode_used,
        "mode_label": MODE_LABELS.get(mode_used or "", ""),
        "fallback_reason": record.get("fallback_reason"),
        "clear_selection": bool(record.get("clear_selection")),
        "query_type": record.get("query_type") or "",
        "retrieval_query": record.get("retrieval_query", ""),
        "chunks_retrieved": record.get("chunks_retrieved_count"),
        "chunks_used": record.get("chunks_used_count"),
        "retrieval_latency_ms": record.get("retrieval_latency_ms"),
        "synthesis_latency_ms": record.get("synthesis_latency_ms"),
        "total_latency_ms": record.get("total_latency_ms"),
        "latency_ms": dict(record.get("stage_latency_ms") or {}),
        "llm_provider": record.get("llm_provider", ""), "llm_model": record.get("llm_model", ""),
        "notices": record_notices(record),
    }
    citations = tuple(Citation(**{k: c.get(k, d) for k, d in CITATION_DEFAULTS.items()})
                      for c in record.get("citations") or [] if isinstance(c, dict))
    verdicts = tuple(Verdict(**{k: v.get(k, "") for k in
                                ("guardrail", "reason_code", "action", "message")})
                     for v in record.get("guardrail_actions") or [] if isinstance(v, dict))
    score = float(record.get("confidence_score") or 0.0)
    confidence = Confidence(float(record.get("retrieval_confidence") or 0.0),
                            float(record.get("generation_confidence") or 0.0), score,
                            record.get("confidence_level") or "low")
    return Response(answer=record.get("answer_text") or "", citations=citations,
                    metadata=metadata, validation=dict(record.get("validation") or {}),
                    confidence=confidence, status=record.get("status") or "error",
                    error_message=record.get("error_message") or "",
                    error_stage=record.get("error_stage") or "", verdicts=verdicts,
                    settings={**{k: record[k] for k in ("book_id", "book_title") if record.get(k)},
                              **dict(record.get("settings") or {})})
