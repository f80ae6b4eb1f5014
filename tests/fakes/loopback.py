"""A scripted HTTP server on 127.0.0.1 that the provider fakes build on.

Each request takes the next planned response (or the default success), after an optional delay
that shutdown interrupts, so a slow-mode test never holds up the suite.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

POLL_S = 0.02  # how often serve_forever checks for shutdown; the default 0.5 s slows teardown
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


@dataclass(frozen=True)
class Plan:
    """One scripted response; fields a fake does not use are ignored."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: Any = None  # JSON sent as-is instead of the fake's own body
    text: str | None = None  # reply text (Anthropic)
    stream_error: str | None = None  # error type sent after the first delta (Anthropic)
    stall: float = 0.0  # pause after the first streamed delta (Anthropic, OpenAI)
    cut: str | None = None  # how a stream breaks off after its first delta (OpenAI)


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any


class LoopbackServer:
    """Subclasses implement `respond`; use as a context manager or call start() and stop()."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._plans: deque[Plan] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.fake = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(POLL_S,),
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def plan(self, **fields: Any) -> None:
        """Queue one response, e.g. plan(status=429, headers={"Retry-After": "0"})."""
        with self._lock:
            self._plans.append(Plan(**fields))

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def pause(self, seconds: float) -> bool:
        """Sleep unless the server is shutting down; True when interrupted."""
        return self._stopping.wait(seconds)

    def respond(self, handler: BaseHTTPRequestHandler, request: Received, plan: Plan) -> None:
        raise NotImplementedError

    def _next_plan(self, request: Received) -> Plan:
        with self._lock:
            self.requests.append(request)
            return self._plans.popleft() if self._plans else Plan()


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        fake: LoopbackServer = self.server.fake  # type: ignore[attr-defined]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode("utf-8", "replace")
        request = Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        plan = fake._next_plan(request)
        if plan.delay and fake.pause(plan.delay):
            return
        try:
            fake.respond(self, request, plan)
        except CLIENT_GONE:
            pass  # the client gave up (a timeout test); nothing left to tell it

    def log_message(self, format: str, *args: Any) -> None:
        pass


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any,
              headers: dict[str, str] | None = None) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(data)
