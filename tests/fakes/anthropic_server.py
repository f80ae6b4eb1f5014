"""A loopback stand-in for Anthropic's POST /v1/messages: JSON replies, SSE streams, error bodies.

Like the real API at anthropic-version 2026-10-21 (what SDK 2.x sends), it rejects the sampling
parameters temperature, top_p and top_k, and a "system" role inside messages.

Citations: when the request carries plain-text documents with citations enabled, the reply text
is written in Folio's marker notation and sent in the citations wire format, as Claude would: in
"As the book says, the integral term removes offset [S1]." the clause before [S1] becomes a text
block citing, as a char_location, the sentence of document 0 sharing most words with it; the rest
("As the book says, ", ".") is uncited text.
Streams send each cited block's citations as citations_delta events before its text_delta ones.
A plan's body that is a list is the reply's content blocks as-is (see text_block and
char_location), for citations no model would make; a dict body is the whole reply, unstreamed.
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
# where a cited clause starts: after a sentence, a line, or a comma and its conjunction
CLAUSE_BREAK_RE = re.compile(r"(?<=[.!?])\s+|\n|,\s+(?:(?:and|but|or|so|while)\s+)?")
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


def char_location(document_index: int, start: int, end: int, cited_text: str,
                  title: str | None = None) -> dict[str, Any]:
    return {"type": "char_location", "cited_text": cited_text, "document_index": document_index,
            "document_title": title, "start_char_index": start, "end_char_index": end}


def text_block(text: str, *citations: dict[str, Any]) -> dict[str, Any]:
    """A reply text block; only a cited one has a citations key."""
    return {"type": "text", "text": text, **({"citations": list(citations)} if citations else {})}


def cited_documents(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The last user turn's documents, when citations are enabled on them."""
    content = body["messages"][-1].get("content") if body.get("messages") else None
    documents = [b for b in content if b.get("type") == "document"] \
        if isinstance(content, list) else []
    return documents if documents and documents[0].get("citations", {}).get("enabled") else []


def best_sentence(claim: str, document: dict[str, Any], index: int) -> dict[str, Any]:
    """A char_location of the document's sentence with the most words in common with the claim."""
    text = document["source"]["data"]
    words = set(re.findall(r"\w+", claim.lower()))
    sentences = [m.span() for m in re.finditer(r"\S.*?(?:[.!?](?=\s)|$)", text, re.DOTALL)]
    start, end = max(sentences, key=lambda s: len(words & set(
        re.findall(r"\w+", text[s[0]:s[1]].lower()))))
    return char_location(index, start, end, text[start:end], document.get("title"))


def cite_markers(reply: str, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reply's text blocks, with each clause before an [Sn] marker citing document n-1.
    A marker naming no document stays in the text, as a model typing one would leave it."""
    blocks: list[dict[str, Any]] = []
    position = 0
    for marker in re.finditer(r"\s*\[S(\d+)\]", reply):
        index = int(marker.group(1)) - 1
        segment = reply[position:marker.start()]
        if not 0 <= index < len(documents):
            blocks.append(text_block(reply[position:marker.end()]))
        elif not segment and blocks and "citations" in blocks[-1]:  # [S1][S2]: one more source
            blocks[-1]["citations"].append(best_sentence(blocks[-1]["text"], documents[index],
                                                         index))
        else:
            breaks = list(CLAUSE_BREAK_RE.finditer(segment))
            cut = breaks[-1].end() if breaks else 0
            cut += len(segment[cut:]) - len(segment[cut:].lstrip())  # spacing is not the claim
            lead, claim = segment[:cut], segment[cut:]
            if lead:
                blocks.append(text_block(lead))
            blocks.append(text_block(claim, best_sentence(claim, documents[index], index)))
        position = marker.end()
    if position < len(reply):
        blocks.append(text_block(reply[position:]))
    return blocks


def split_deltas(text: str) -> list[str]:
    """Pieces of two words (with their spacing) so a reply streams as several deltas."""
    words = re.findall(r"\s*\S+\s*", text)
    return ["".join(words[i:i + 2]) for i in range(0, len(words), 2)] or [text]


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
        elif isinstance(plan.body, dict):
            send_json(handler, 200, plan.body, plan.headers)
        else:
            send_json(handler, 200, self._message(request.body, plan), plan.headers)

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
            if isinstance(message.get("content"), list) and (
                    problem := invalid_content(message["content"])):
                return problem
        return None

    def _message(self, body: dict[str, Any], plan: Plan, started: bool = False
                 ) -> dict[str, Any]:
        """The reply; `started`: as message_start shows it, before any content."""
        content = [] if started else self._content(body, plan)
        prompt = json.dumps(body.get("messages", [])) + str(body.get("system", ""))
        words = sum(len(block["text"].split()) for block in content)
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
            "model": body["model"], "content": content,
            "stop_reason": None if started else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": len(prompt.split()),
                      "output_tokens": 1 if started else words},
        }

    def _content(self, body: dict[str, Any], plan: Plan) -> list[dict[str, Any]]:
        if isinstance(plan.body, list):
            return plan.body
        reply = plan.text if plan.text is not None else self.reply
        documents = cited_documents(body)
        if documents:
            return cite_markers(reply, documents)
        return [text_block(reply)] if reply else []

    def _stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], plan: Plan) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        for name, value in plan.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        final = self._message(body, plan)
        send_event(handler, "message_start",
                   {"type": "message_start", "message": self._message(body, plan, started=True)})
        for index, block in enumerate(final["content"] or [text_block("")]):
            if not self._stream_block(handler, index, block, plan):
                return
        send_event(handler, "message_delta", {
            "type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": final["usage"]["output_tokens"]}})
        send_event(handler, "message_stop", {"type": "message_stop"})

    def _stream_block(self, handler: BaseHTTPRequestHandler, index: int, block: dict[str, Any],
                      plan: Plan) -> bool:
        """One content block's events: its citations first, then its text; False once the
        plan ends the stream (an error event, or a stall interrupted by shutdown)."""
        start = {"type": "text", "text": "", **({"citations": []} if "citations" in block else {})}
        send_event(handler, "content_block_start", {
            "type": "content_block_start", "index": index, "content_block": start})
        if index == 0:
            send_event(handler, "ping", {"type": "ping"})
        for citation in block.get("citations", []):
            send_event(handler, "content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "citations_delta", "citation": citation}})
        for number, delta in enumerate(split_deltas(block["text"])):
            send_event(handler, "content_block_delta", {
                "type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": delta}})
            if plan.stream_error:  # the real API reports late failures as an SSE error event
                send_event(handler, "error", error_body(plan.stream_error))
                return False
            if index == number == 0 and plan.stall and self.pause(plan.stall):
                return False
        send_event(handler, "content_block_stop", {"type": "content_block_stop", "index": index})
        return True


def invalid_content(content: list[Any]) -> str | None:
    """What the API says about a malformed content list, or None."""
    documents = []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            continue
        if kind != "document":
            return f"messages.content: Input tag {kind!r} does not match any expected tag"
        source = block.get("source") or {}
        if source.get("type") != "text" or source.get("media_type") != "text/plain" or \
                not isinstance(source.get("data"), str):
            return "messages.content.document.source: a plain-text source needs type \"text\", " \
                   "media_type \"text/plain\" and string data"
        documents.append(block)
    if len({bool((d.get("citations") or {}).get("enabled")) for d in documents}) > 1:
        return "Citations must be enabled on all documents or on none of them."
    return None


def send_event(handler: BaseHTTPRequestHandler, name: str, data: dict[str, Any]) -> None:
    handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
    handler.wfile.flush()
