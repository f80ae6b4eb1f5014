"""A loopback stand-in for an OpenAI-compatible server's POST /v1/chat/completions (Ollama, vLLM,
llama.cpp's llama-server, LM Studio, OpenAI): JSON replies, SSE streams of chat.completion.chunk
objects ending in `data: [DONE]`, and error bodies in the {"error": {...}} shape they share.

Streams are HTTP/1.1 chunked, as those servers send them, so a server dying mid-answer looks as it
does in life. A plan's `cut` breaks a stream off after its first content delta (an unstreamed
reply halfway through its body, "end" there as "close"):
- "close": the connection closes in the middle of the chunked body (a killed server process);
- "reset": the connection is reset (RST);
- "end": the body ends cleanly but early, with no finish_reason and no [DONE] (a proxy giving up).
`stall` pauses after the first delta; `stream_error` sends an error object as the next event, as
vLLM does when generation fails mid-stream. `text` replaces the reply (what the "model" writes).

With `models` given, a model name outside them is answered 404 as Ollama words it.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import time
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.loopback import LoopbackServer, Plan, Received, send_json

DEFAULT_REPLY = "The integral term removes steady-state error [S1].\nConfidence: 0.92"
ROLES = ("system", "user", "assistant")
ERRORS = {  # status -> (type, message), as OpenAI words them
    400: ("invalid_request_error", "This model's maximum context length is 8192 tokens."),
    401: ("invalid_request_error", "Incorrect API key provided."),
    404: ("invalid_request_error", "The model does not exist."),
    429: ("rate_limit_error", "Rate limit reached for requests."),
    500: ("server_error", "The server had an error while processing your request."),
    503: ("server_error", "The engine is currently overloaded, please try again later."),
}


def error_body(status: int, message: str | None = None) -> dict[str, Any]:
    kind, default = ERRORS.get(status, ("server_error", "Internal error."))
    return {"error": {"message": message or default, "type": kind, "param": None,
                      "code": None}}


def split_deltas(text: str) -> list[str]:
    """Pieces of two words (with their spacing), so a reply streams as several deltas."""
    words = re.findall(r"\s*\S+\s*", text)
    return ["".join(words[i:i + 2]) for i in range(0, len(words), 2)] or [text]


class OpenAIServer(LoopbackServer):
    def __init__(self, reply: str = DEFAULT_REPLY, models: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.reply = reply
        self.models = models

    @property
    def base_url(self) -> str:
        """What a client is configured with: the API lives under /v1."""
        return self.url + "/v1"

    @property
    def chat_requests(self) -> list[Received]:
        return [r for r in self.requests if r.path == "/v1/chat/completions"]

    def respond(self, handler: BaseHTTPRequestHandler, request: Received, plan: Plan) -> None:
        body = request.body
        if plan.status != 200:
            payload = plan.body or error_body(plan.status)
            send_json(handler, plan.status, payload, plan.headers)
        elif request.path != "/v1/chat/completions":
            send_json(handler, 404, {"error": {"message": f"404 page not found: {request.path}",
                                               "type": "not_found"}})
        elif problem := invalid(body):
            send_json(handler, 400, error_body(400, problem))
        elif self.models and body["model"] not in self.models:
            send_json(handler, 404, error_body(
                404, f'model "{body["model"]}" not found, try pulling it first'))
        elif isinstance(plan.body, str):  # not an OpenAI-compatible server: a web page
            data = plan.body.encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "text/html")
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        elif body.get("stream"):
            self._stream(handler, body, plan)
        elif plan.stall and self.pause(plan.stall):  # unstreamed: stalls before any byte
            return
        elif plan.cut:
            send_part(handler, completion(body["model"], self._text(plan)), plan.cut)
        elif isinstance(plan.body, dict):
            send_json(handler, 200, plan.body, plan.headers)
        else:
            send_json(handler, 200, completion(body["model"], self._text(plan)), plan.headers)

    def _text(self, plan: Plan) -> str:
        return plan.text if plan.text is not None else self.reply

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], plan: Plan) -> None:
        handler.protocol_version = "HTTP/1.1"  # chunked, as real servers stream
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        handler.close_connection = True
        stream_id, model = f"chatcmpl-{uuid.uuid4().hex[:24]}", body["model"]
        send_chunk(handler, chunk(stream_id, model, {"role": "assistant", "content": ""}))
        for number, piece in enumerate(split_deltas(self._text(plan))):
            send_chunk(handler, chunk(stream_id, model, {"content": piece}))
            if number == 0 and not self._go_on(handler, plan):
                return
        send_chunk(handler, chunk(stream_id, model, {}, finish_reason="stop"))
        send_event(handler, "[DONE]")
        end_body(handler)

    def _go_on(self, handler: BaseHTTPRequestHandler, plan: Plan) -> bool:
        """After the first delta: stall, fail or break off as planned; False once the stream
        has ended."""
        if plan.stall and self.pause(plan.stall):
            return False
        if plan.stream_error:
            send_event(handler, json.dumps(error_body(500, plan.stream_error)))
            end_body(handler)
            return False
        if plan.cut == "end":
            end_body(handler)
        elif plan.cut:
            break_connection(handler, plan.cut)
        return plan.cut is None


def break_connection(handler: BaseHTTPRequestHandler, cut: str) -> None:
    """"reset": an RST; else the connection closes as a killed process's would."""
    handler.wfile.flush()
    if cut == "reset":
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                      struct.pack("ii", 1, 0))
        handler.connection.close()
    else:
        handler.connection.shutdown(socket.SHUT_RDWR)
    handler.close_connection = True


def send_part(handler: BaseHTTPRequestHandler, payload: dict[str, Any], cut: str) -> None:
    """A JSON reply that stops halfway through its body (an unstreamed answer cut off)."""
    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data[:len(data) // 2])
    break_connection(handler, cut)


def invalid(body: Any) -> str | None:
    """What an OpenAI-compatible server says about a malformed request, or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "you must provide a model parameter"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: field required"
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            return "messages: each message needs a role of system, user or assistant"
        if not isinstance(message.get("content"), str):
            return "messages: content must be a string"
    for name in ("max_tokens", "max_completion_tokens"):
        if name in body and not (isinstance(body[name], int) and body[name] > 0):
            return f"{name} must be a positive integer"
    return None


def completion(model: str, text: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 100, "completion_tokens": len(text.split()),
                      "total_tokens": 100 + len(text.split())}}


def chunk(stream_id: str, model: str, delta: dict[str, Any],
          finish_reason: str | None = None) -> dict[str, Any]:
    return {"id": stream_id, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                         "finish_reason": finish_reason}]}


def send_chunk(handler: BaseHTTPRequestHandler, data: dict[str, Any]) -> None:
    send_event(handler, json.dumps(data))


def send_event(handler: BaseHTTPRequestHandler, data: str) -> None:
    """One SSE event as one HTTP chunk."""
    payload = f"data: {data}\n\n".encode()
    handler.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
    handler.wfile.flush()


def end_body(handler: BaseHTTPRequestHandler) -> None:
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def main() -> None:
    """Serve as a process of its own, every request planned alike, printing its base URL and
    then "requests N" as each arrives: a test kills it mid-answer, as a server dies."""
    import argparse
    import sys

    parser = argparse.ArgumentParser()
    parser.add_argument("--stall", type=float, default=0.0)
    parser.add_argument("--reply", default=DEFAULT_REPLY)
    args = parser.parse_args()
    server = OpenAIServer(args.reply).start()
    for _ in range(1000):
        server.plan(stall=args.stall)
    print(server.base_url, flush=True)
    seen = 0
    while True:
        time.sleep(0.01)
        if len(server.requests) != seen:
            seen = len(server.requests)
            print(f"requests {seen}", flush=True)
            sys.stdout.flush()


if __name__ == "__main__":
    main()
