"""uvicorn with the connection hygiene it lacks (issue 43: ~20,000 idle sockets exhausted the
process's file descriptors and nobody could ask):

- a request head must arrive within `head_timeout_s` of the connection opening (or of the last
  response on a kept-alive one): a connection that sends nothing, or half a request line, is
  closed (uvicorn's keep-alive timer only starts after a first response, and stops at the first
  byte received). A body has its own limit (rag.serve.errors.BodyLimit).
- at most `max_connections` open at once; one more is answered 503 with Retry-After at once
  and closed. The cap and the accept backlog (asyncio accepts up to `backlog` sockets in one
  burst before any of them is looked at) together stay below the process's file-descriptor
  limit, raised to its hard limit at start, so accept() never fails with `Errno 24`.
- the log through rag.serve.logs (no tokens, no storms)."""

from __future__ import annotations

import logging
import resource
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("rag.serve")
DEFAULT_MAX_CONNECTIONS = 1000
DEFAULT_HEAD_TIMEOUT_S = 10.0
FD_RESERVE = 128  # for the audit, the rate limits, the answering processes' pipes (20 used)
DEFAULT_BACKLOG = 2048  # uvicorn's
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        b"retry-after: 1\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s")
BUSY_BODY = (b'{"error": "server_busy", "message": "The server has too many open connections; '
             b'try again in a second."}')
TIMED_OUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
             b"connection: close\r\ncontent-length: %d\r\n\r\n%s")
TIMED_OUT_BODY = (b'{"error": "request_timeout", "message": "The request did not arrive in '
                  b'time; send it again."}')


@dataclass(frozen=True)
class Limits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S


def descriptor_budget(wanted: int) -> tuple[int, int]:
    """(connection cap, accept backlog): `wanted` and uvicorn's 2048, lowered so that the
    connections held, one accept burst and FD_RESERVE fit in this process's file-descriptor
    limit (its soft limit raised to the hard one first, as servers do). Half the room for held
    connections, a quarter for a burst: with 256 descriptors, 64 and 32."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY:
        return wanted, DEFAULT_BACKLOG
    room = max(4, soft - FD_RESERVE)
    return max(1, min(wanted, room // 2)), max(1, min(DEFAULT_BACKLOG, room // 4))


class Refusals:
    """Connections refused over the cap, said in the log at most once a minute."""

    count = 0
    said_at = 0.0

    @classmethod
    def note(cls, cap: int) -> None:
        cls.count += 1
        now = time.monotonic()
        if now - cls.said_at >= 60:
            log.warning("Refused %d connection(s) over the cap of %d open at once (503).",
                        cls.count, cap)
            cls.count, cls.said_at = 0, now


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with the head timeout and the connection cap."""

    limits: ClassVar[Limits] = Limits()

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._head_timer = None
        self._received = False
        if len(self.connections) > self.limits.max_connections:
            Refusals.note(self.limits.max_connections)
            transport.write(BUSY % (len(BUSY_BODY), BUSY_BODY))
            transport.close()
            return
        self._await_head()

    def _await_head(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.limits.head_timeout_s, self._head_late)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_late(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered: its head did arrive
        if not self.transport.is_closing():
            if self._received:  # half a request: say why it ends
                self.transport.write(TIMED_OUT % (len(TIMED_OUT_BODY), TIMED_OUT_BODY))
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        self._received = True
        super().data_received(data)
        if self.cycle is not cycle:  # a whole request head arrived
            self._stop_head_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._received = False
        if not self.transport.is_closing():
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)


def uvicorn_options(limits: Limits, level: str, access_log: bool) -> dict[str, Any]:
    """What rag serve passes to uvicorn.run, in one process or several."""
    from rag.serve.logs import log_config

    cap, backlog = descriptor_budget(limits.max_connections)
    GuardedH11.limits = Limits(cap, limits.head_timeout_s)
    return {"http": GuardedH11, "backlog": backlog, "log_level": level, "access_log": access_log,
            "log_config": log_config(level, access_log), "server_header": False,
            "timeout_keep_alive": 5}
