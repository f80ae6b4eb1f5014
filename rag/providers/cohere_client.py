"""Talking to Cohere (embed and rerank) through the `cohere` SDK: one client, our own retry loop
(the SDK's is switched off), timeouts cut to the step's deadline, and errors a user can act on.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

from rag.errors import ConfigError, ProviderError
from rag.providers.base import seconds_left

DEFAULT_URL = "https://api.cohere.com"
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
RETRY_AFTER_CAP_S = 30.0  # a server asking for longer is reported, not waited on for minutes
# Under a deadline (a question's retrieval budget, 2 s by default) a call retries once, quickly,
# and only when a useful attempt still fits; the full backoff (0.5+1+2+4 s) is for ingest.
DEADLINE_RETRIES = 1
DEADLINE_RETRY_PAUSE_S = 0.1
MIN_ATTEMPT_S = 0.2
KEY_REJECTED = (401, 403, 498)  # 498 is Cohere's "invalid token"


class CohereCaller:
    """What every Cohere call shares; subclasses name the call (`what`) and the way out
    (`instead`) for their messages."""

    what = "embed"
    instead = "use RAG_EMBEDDER=local"
    api_key: str
    base_url: str | None
    timeout: float
    max_retries: int
    sleep: Callable[[float], None]
    _client: Any = None

    def _configure(self, model: str, api_key: str | None, base_url: str | None,
                   timeout: float, max_retries: int, sleep: Callable[[float], None],
                   missing_key: str) -> None:
        """The key (argument, environment or secrets.toml; ConfigError `missing_key` without
        one), the URL (COHERE_BASE_URL for a loopback server), timeouts and retries."""
        from rag.config import get_secret

        self.api_key = api_key or get_secret("COHERE_API_KEY")
        if not self.api_key:
            raise ConfigError(missing_key)
        self.model_id = model
        self.base_url = base_url or os.environ.get("COHERE_BASE_URL") or None
        self.timeout = timeout
        self.max_retries = max_retries
        self.sleep = sleep
        self._client = None

    def client(self) -> Any:
        if self._client is None:
            cohere = import_cohere()
            options: dict[str, Any] = {"api_key": self.api_key, "timeout": self.timeout,
                                       "max_retries": 0}  # the retry count is ours
            if self.base_url:
                options["base_url"] = self.base_url
            self._client = cohere.ClientV2(**options)
        return self._client

    def _with_retries(self, call: Callable[[float], Any]) -> Any:
        """Run call(timeout), retrying 429, 5xx, timeouts and connection errors with backoff;
        under a network deadline, once and briefly, giving up before the deadline passes."""
        import httpx
        from cohere.core.api_error import ApiError
        from cohere.core.parse_error import ParsingError

        bounded = seconds_left() is not None
        retries = min(self.max_retries, DEADLINE_RETRIES) if bounded else self.max_retries
        attempts = max(retries, 0) + 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            timeout = self._attempt_timeout()
            try:
                return call(timeout)
            except ApiError as e:
                status = e.status_code or 0
                if last or not (status == 429 or status >= 500) or \
                        not self._pause(retry_delay(attempt, e.headers)):
                    raise ProviderError(self._describe_status(status, e.body, attempt)) from e
            except httpx.TransportError as e:
                if last or not self._pause(retry_delay(attempt, None)):
                    raise ProviderError(self._unreachable(e, timeout)) from e
            except ParsingError as e:
                raise ProviderError(f"Cohere sent a {self.what} response Folio could not read "
                                    f"({e}); try again, or {self.instead}.") from e
        raise AssertionError("unreachable: every attempt returns, raises or retries")

    def _attempt_timeout(self) -> float:
        """This attempt's timeout: ours, cut to the time left before the deadline."""
        left = seconds_left()
        if left is None:
            return self.timeout
        if left < MIN_ATTEMPT_S:
            raise ProviderError(f"Cohere was not asked: the time for this step had run out; try "
                                f"again, or {self.instead}.")
        return min(self.timeout, left)

    def _pause(self, delay: float) -> bool:
        """Wait before a retry; False (no wait) when a retry would not fit the deadline."""
        left = seconds_left()
        if left is not None:
            delay = DEADLINE_RETRY_PAUSE_S
            if left < delay + MIN_ATTEMPT_S:
                return False
        self.sleep(delay)
        return True

    def _describe_status(self, status: int, body: Any, retried: int) -> str:
        retries = f"after {retried} retries"
        if status in KEY_REJECTED:
            return f"Cohere rejected the API key ({status}). Check COHERE_API_KEY."
        if status == 429:
            return (f"Cohere's rate limit was hit (429) and still applied {retries}; wait a "
                    "minute and try again, or {self.instead}.")
        if status >= 500:
            return f"Cohere's service failed (HTTP {status}) {retries}; try again shortly."
        if status < 400:
            return (f"Cohere sent a {self.what} response Folio could not read (HTTP {status}); "
                    f"try again, or {self.instead}.")
        return f"Cohere refused the request (HTTP {status}): {error_message(body)}"

    def _unreachable(self, error: Exception, timeout: float) -> str:
        import httpx

        url = self.base_url or DEFAULT_URL
        if isinstance(error, httpx.TimeoutException):
            return (f"Cohere at {url} did not answer within {timeout:.3g} s; try again, "
                    f"or {self.instead}.")
        return (f"Could not reach Cohere at {url} ({type(error).__name__}); check the network "
                f"or COHERE_BASE_URL, or {self.instead}.")


def retry_delay(attempt: int, headers: dict[str, str] | None) -> float:
    """Retry-After when the server sent one, else 0.5 s doubling per attempt, capped at 8 s."""
    retry_after = parse_retry_after(headers or {})
    if retry_after is not None:
        return min(retry_after, RETRY_AFTER_CAP_S)
    return min(BACKOFF_BASE_S * 2 ** attempt, BACKOFF_CAP_S)


def parse_retry_after(headers: dict[str, str]) -> float | None:
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), None)
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        return max(parsedate_to_datetime(value).timestamp() - time.time(), 0.0)
    except (TypeError, ValueError):
        return None


def error_message(body: Any) -> str:
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(body)


def import_cohere() -> Any:
    try:
        import cohere
    except ImportError as e:
        raise ProviderError("Cohere needs the cohere package: run `pip install cohere`, or "
                            "use RAG_EMBEDDER=local.") from e
    return cohere


