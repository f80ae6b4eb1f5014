"""A Response as one audit row: its record plus the log's ids, with every known secret scrubbed."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from rag.answer.record import to_record
from rag.config import SECRET_NAMES, get_secret
from rag.types import Response

REDACTED = "[REDACTED]"
# Any env var ending like this is treated as a secret too, beyond the named provider keys.
SECRET_ENV_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
# Shorter values are not real keys, and scrubbing them would mangle ordinary words.
MIN_SECRET_CHARS = 8
SECRET_REFRESH_S = 5.0


def build_row(response: Response, *, log_id: str, session_id: str = "", client_id: str = "",
              app_version: str = "") -> dict[str, Any]:
    """The answer's record (rag.answer.record) plus what the log adds: ids and the app version."""
    record = to_record(response)
    if not (isinstance(response.metadata, dict) and response.metadata.get("query_id")):
        record["query_id"] = log_id
    return {"log_id": log_id, "session_id": session_id or "", "client_id": client_id or "",
            **record, "app_version": app_version}


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
