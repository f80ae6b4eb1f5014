"""A Response as one audit row (plain JSON-ready values), with every known secret scrubbed out."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from rag.config import SECRET_NAMES, get_secret
from rag.retrieval.hybrid import pool_to_record
from rag.types import Response

REDACTED = "[REDACTED]"
# Any env var ending like this is treated as a secret too, beyond the named provider keys.
SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
# Shorter values are not real keys, and scrubbing them would mangle ordinary words.
MIN_SECRET_CHARS = 8
SECRET_REFRESH_S = 5.0


def utc_iso(value: Any = None) -> str:
    """An ISO-8601 UTC timestamp without offset (the column is UTC by convention)."""
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


def _answer_fields(response: Response, meta: dict[str, Any]) -> dict[str, Any]:
    d, c = response.draft, response.confidence
    sections = [f"{x.module_id}/{x.chapter_id}#{x.section_id}" for x in response.citations]
    return {
        "llm_provider": str(meta.get("llm_provider") or (d.provider if d else "") or ""),
        "llm_model": str(meta.get("llm_model") or (d.model if d else "") or ""),
        "llm_prompt": d.prompt if d else "", "llm_response": d.raw_response if d else "",
        "answer_text": response.answer or "",
        "confidence_score": _number(getattr(c, "score", None)),
        "confidence_level": getattr(c, "level", None),
        "retrieval_confidence": _number(getattr(c, "retrieval", None)),
        "generation_confidence": _number(getattr(c, "generation", None)),
        "citations": [asdict(x) for x in response.citations],
        "cited_sections": list(dict.fromkeys(sections)),
        "guardrail_actions": [asdict(v) for v in response.verdicts],
        "reason_codes": [v.reason_code for v in response.verdicts],
    }


def build_row(response: Response, *, log_id: str, session_id: str = "", client_id: str = "",
              app_version: str = "") -> dict[str, Any]:
    """Map a Response to the audit columns; tolerant of error Responses with parts missing."""
    meta = response.metadata if isinstance(response.metadata, dict) else {}
    question = meta.get("question") or (response.retrieval.query if response.retrieval else "")
    return {
        "log_id": log_id, "query_id": str(meta.get("query_id") or log_id),
        "answer_id": str(meta.get("answer_id") or uuid.uuid4()),
        "session_id": session_id or "", "client_id": client_id or "",
        "timestamp": utc_iso(meta.get("timestamp")), "user_query_text": str(question or ""),
        "source_mode": meta.get("mode"), "mode_used": meta.get("mode_used"),
        "fallback_reason": meta.get("fallback_reason"),
        **_retrieval_fields(response, meta), **_answer_fields(response, meta),
        "validation": response.validation or {}, "notices": list(meta.get("notices") or []),
        "status": response.status, "success": response.status in ("success", "partial"),
        "error_stage": response.error_stage or "", "error_message": response.error_message or "",
        "settings": response.settings or {}, "app_version": app_version,
    }


def current_secrets() -> tuple[str, ...]:
    """Values of the named provider keys and of any *_API_KEY/*_TOKEN/... env var, longest first."""
    values = {get_secret(name) for name in SECRET_NAMES}
    values |= {v.strip() for k, v in os.environ.items() if k.upper().endswith(SECRET_ENV_SUFFIXES)}
    return tuple(sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True))


def scrub(value: Any, secrets: tuple[str, ...]) -> Any:
    """A copy of value with every secret in every string (keys too) replaced by [REDACTED]."""
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {scrub(k, secrets): scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v, secrets) for v in value]
    return value


class RowEncoder:
    """Row -> one scrubbed JSON line. Secrets are re-read every few seconds, not per row."""

    def __init__(self, refresh_s: float = SECRET_REFRESH_S) -> None:
        self._refresh_s = refresh_s
        self._secrets: tuple[str, ...] = ()
        self._forms: tuple[str, ...] = ()  # each secret raw and as it looks inside JSON
        self._checked = float("-inf")
        self._lock = threading.Lock()

    def secrets(self) -> tuple[str, ...]:
        with self._lock:
            if time.monotonic() - self._checked > self._refresh_s:
                self._secrets, self._checked = current_secrets(), time.monotonic()
                self._forms = tuple({f for s in self._secrets
                                     for f in (s, json.dumps(s, ensure_ascii=False)[1:-1])})
            return self._secrets

    def encode(self, row: dict[str, Any]) -> bytes:
        secrets = self.secrets()
        line = _dumps(row)
        # Fast path: one substring search per secret; walk the row only when one is present.
        if any(form in line for form in self._forms):
            line = _dumps(scrub(row, secrets))
            for form in self._forms:  # a secret spanning two values: last resort, on the text
                line = line.replace(form, REDACTED)
        return (line + "\n").encode("utf-8", errors="replace")


def _dumps(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=str)
