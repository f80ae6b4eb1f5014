"""A loopback stand-in for Anthropic's POST /v1/messages: JSON replies, SSE streams, error bodies.

Like the real API at anthropic-version 2026-10-21 (what SDK 2.x sends), it rejects the sampling
parameters temperature, top_p and top_k, and a "system" role inside messages.
"""

from __future__ import annotations

import json
import re
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import LoopbackServer, Plan, Received, send_json

DEFAULT_REPLY = "The integral term removes steady-state error [S1].\nConfidence: 0.92"
STRICT_VERSION = "2026-10-21"
SAMPLING_PARAMS = ("temperature", "top_p", "top_k")
ERROR_TYPES = {
    400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
    404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
    500: "api_error", 529: "overloaded_error",
}
ERROR_MESSAGES = {
    "authentication_error": "invalid x-api-key",
    "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}


def error_body(error_type: str, message: str | None = None) -> dict[str, Any]:
    return {"type": "error",
            "error": {"type": error_type, "message": message or ERROR_MESSAGES.get(error_type, "")},
            "request_id": f"req_{uuid.uuid4().hex[:24]}"}


def split_deltas(text: str) -> list[str]:
    """Pieces of two words (with their spacing) so a reply streams as several deltas."""
    words = re.findall(r"\S+\s*", text)
    return ["".join(words[i:i + 2]) for i in range(0, len(words), 2)] or [""]


class AnthropicServer(LoopbackServer):
    def __init__(self, reply: str = DEFAULT_REPLY) -> None:
        super().__init__()
        self.reply = reply

    @property
    def message_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path == "/v1/messages"]

    def respond(self, handler: BaseHTTPRequestHandler, request: Received, plan: Plan) -> None:
        if plan.status != 200:
            error_type = ERROR_TYPES.get(plan.status, "api_error")
            send_json(handler, plan.status, plan.body or error_body(error_type), plan.headers)
        elif request.path != "/v1/messages":
            send_json(handler, 404, error_body("not_found_error", f"Not found: {request.path}"))
        elif problem := self._invalid(request):
            send_json(handler, 400, error_body("invalid_request_error", problem))
        elif request.body.get("stream"):
            self._stream(handler, request.body, plan)
        else:
            send_json(handler, 200, plan.body or self._message(request.body, plan), plan.headers)

    def _invalid(self, request: Received) -> str | None:
        body = request.body
        if not isinstance(body, dict):
            return "request body must be a JSON object"
        for name in ("model", "max_tokens", "messages"):
            if name not in body:
                return f"{name}: Field required"
        if request.headers.get("anthropic-version") == STRICT_VERSION:
            for name in SAMPLING_PARAMS:
                if name in body:
                    return f"{name}: Extra inputs are not permitted"
        for message in body["messages"]:
            if message.get("role") not in ("user", "assistant"):
                return (f"messages: Unexpected role {message.get('role')!r}. The Messages API "
                        "accepts a top-level `system` parameter, not \"system\" as an input role.")
        return None

    def _message(self, body: dict[str, Any], plan: Plan, text: str | None = None) -> dict[str, Any]:
        reply = text if text is not None else plan.text if plan.text is not None else self.reply
        prompt = json.dumps(body.get("messages", [])) + str(body.get("system", ""))
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": reply}] if reply else [],
            "stop_reason": "end_turn" if text is None else None, "stop_sequence": None,
            "usage": {"input_tokens": len(prompt.split()),
                      "output_tokens": len(reply.split()) if text is None else 1},
        }

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], plan: Plan) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        for name, value in plan.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        final = self._message(body, plan)
        deltas = split_deltas(final["content"][0]["text"] if final["content"] else "")
        send_event(handler, "message_start",
                   {"type": "message_start", "message": self._message(body, plan, text="")})
        send_event(handler, "content_block_start", {"type": "content_block_start", "index": 0,
                                                    "content_block": {"type": "text", "text": ""}})
        send_event(handler, "ping", {"type": "ping"})
        for number, delta in enumerate(deltas):
            send_event(handler, "content_block_delta", {
                "type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": delta}})
            if plan.stream_error:  # the real API reports late failures as an SSE error event
                send_event(handler, "error", error_body(plan.stream_error))
                return
            if number == 0 and plan.stall and self.pause(plan.stall):
                return
        send_event(handler, "content_block_stop", {"type": "content_block_stop", "index": 0})
        send_event(handler, "message_delta", {
            "type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": final["usage"]["output_tokens"]}})
        send_event(handler, "message_stop", {"type": "message_stop"})


def send_event(handler: BaseHTTPRequestHandler, name: str, data: dict[str, Any]) -> None:
    handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    handler.wfile.flush()
