"""The server's log: no token in any line, and no storm.

- Access lines show the path only for the API's own paths, and never the query string: a
  token sent as `?token=...` (or as a path) would otherwise be written verbatim (issue 43).
- The same message (not access lines, which are traffic) more than REPEAT_LIMIT times a minute
  is held back and counted, and the next one after the minute says how many were: a flood of
  `Errno 24` tracebacks once grew the log 54 MB in 30 s."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

API_PATHS = frozenset({"/v1/ask", "/v1/search", "/v1/health", "/v1/models",
                       "/v1/chat/completions", "/docs", "/docs/oauth2-redirect", "/redoc",
                       "/openapi.json"})
API_PREFIXES = ("/docs-assets/",)
OTHER_PATH = "[another path]"
REPEAT_LIMIT = 5
REPEAT_WINDOW_S = 60.0


def shown_path(path: str) -> str:
    """What an access line may show of a request's path (its query string never)."""
    path = path.split("?", 1)[0]
    return path if path in API_PATHS or path.startswith(API_PREFIXES) else OTHER_PATH


class RedactPaths(logging.Filter):
    """On uvicorn.access records, whose arguments are (client, method, path?query, http, status)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], shown_path(args[2]), args[3], args[4])
        return True


class RepeatLimit(logging.Filter):
    """At most `limit` records with the same logger and message template per `window_s`; the
    rest are counted, and the first record after the window says how many were held back (its
    traceback dropped when it repeats one already shown)."""

    def __init__(self, limit: int = REPEAT_LIMIT, window_s: float = REPEAT_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.limit, self.window_s, self.clock = limit, window_s, clock
        self._seen: dict[tuple[str, Any], list[float]] = {}  # key: [window start, shown, held]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.msg if isinstance(record.msg, str) else type(record.msg))
        now = self.clock()
        with self._lock:
            if len(self._seen) > 10_000:
                self._seen.clear()  # bounded memory even for ever-new messages
            entry = self._seen.setdefault(key, [now, 0, 0])
            if now - entry[0] >= self.window_s:
                held = entry[2]
                entry[:] = [now, 0, 0]
                if held:
                    record.msg = f"{record.msg} [{held} more like this in the last minute " \
                                 "were not logged]"
                    record.exc_info, record.exc_text = None, None
            if entry[1] < self.limit:
                entry[1] += 1
                return True
            entry[2] += 1
            return False


def log_config(level: str, access: bool) -> dict[str, Any]:
    """uvicorn's logging with the filters above; the root logger (rag's own messages, asyncio's
    accept errors) goes through the repeat limit too."""
    filters = {"repeat": {"()": RepeatLimit}, "redact": {"()": RedactPaths}}
    return {
        "version": 1, "disable_existing_loggers": False, "filters": filters,
        "formatters": {
            "default": {"()": "uvicorn.logging.DefaultFormatter",
                        "fmt": "%(levelprefix)s %(message)s", "use_colors": None},
            "access": {"()": "uvicorn.logging.AccessFormatter",
                       "fmt": '%(levelprefix)s %(client_addr)s - "%(request_line)s" '
                              '%(status_code)s'}},
        "handlers": {
            "default": {"formatter": "default", "class": "logging.StreamHandler",
                        "stream": "ext://sys.stderr", "filters": ["repeat"]},
            "access": {"formatter": "access", "class": "logging.StreamHandler",
                       "stream": "ext://sys.stdout", "filters": ["redact"]}},
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": ["access"] if access else [],
                               "level": "INFO" if access else "WARNING",
                               "propagate": False}},
        "root": {"handlers": ["default"], "level": level.upper()},
    }
