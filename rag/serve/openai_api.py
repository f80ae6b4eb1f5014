"""Folio as an OpenAI-compatible model: GET /v1/models (one model per served book) and
POST /v1/chat/completions (JSON, or the Chat Completions chunk stream), so Open WebUI,
LibreChat or the `openai` SDK can point at it. The same keys, rate limits, answering path and
audit rows as POST /v1/ask: the last user message is the question, the earlier user and
assistant messages its history, `user` its session. The reply is the answer in Markdown with
its sources as links, plus a `folio` field (status, confidence, citations, notices)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from rag.config import MAX_HISTORY_MESSAGES
from rag.serve.auth import Client, count_question
from rag.serve.errors import ApiError
from rag.serve.models import (
    HISTORY_CHARS,
    MAX_SESSION_ID,
    AskRequest,
    HistoryMessage,
    checked_question,
)
from rag.serve.schemas import ChatCompletion, ModelList
from rag.serve.service import BookInfo
from rag.serve.stream import SSE_HEADERS, Delivery, FastJSONResponse, dump_json

OWNER = "folio"
SOURCES = "\n\n**Sources**\n"  # where the answer ends and its list of links begins


class TextPart(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: str
    text: str = ""


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextPart] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "".join(p.text for p in self.content if p.type == "text")
        return self.content or ""


class ChatRequest(BaseModel):
    """The Chat Completions request; sampling settings (temperature, max_tokens, ...) are
    accepted and have no effect: the answer is the pipeline's."""

    model_config = ConfigDict(extra="ignore", json_schema_extra={"examples": [{
        "model": "folio/sample-book", "stream": False,
        "messages": [{"role": "user", "content": "How does a PID loop avoid windup?"}]}]})

    model: str = Field(description="an id from GET /v1/models")
    messages: list[ChatMessage] = Field(min_length=1, max_length=1000)
    stream: bool = False
    user: str | None = Field(None, description="kept as the audit row's session_id")


def model_id(info: BookInfo) -> str:
    return f"{OWNER}/{info.book_id}"


def to_ask(body: ChatRequest) -> AskRequest:
    """The question (the last message, which must be the user's) and up to MAX_HISTORY_MESSAGES
    earlier user and assistant turns, each cut to the history's size limit. System prompts are
    not instructions to Folio (DESIGN.md: query text is data), so they are left out."""
    last = body.messages[-1]
    if last.role != "user" or not last.text().strip():
        raise ApiError(422, "invalid_request", "The last message must be the user's question, "
                       "as text.")
    history = []
    for message in body.messages[:-1]:
        if message.role in ("user", "assistant") and message.text().strip():
            content = message.text().split(SOURCES)[0]  # our own reply, without its links
            history.append(HistoryMessage(role=message.role, content=content[:HISTORY_CHARS]))
    return AskRequest(question=last.text(), history=history[-MAX_HISTORY_MESSAGES:],
                      session_id=(body.user or "")[:MAX_SESSION_ID])


def link_title(citation: dict[str, Any]) -> str:
    title = citation.get("section_title") or citation.get("section_id") or "source"
    return title.replace("[", "(").replace("]", ")")


def sources_markdown(record: dict[str, Any]) -> str:
    """Each cited section once, as a Markdown link after the marker the answer uses for it."""
    lines, seen = [], set()
    for citation in record.get("citations") or []:
        key = citation.get("url") or citation.get("section_id")
        if key in seen:
            continue
        seen.add(key)
        page = f" (page {citation['page']})" if citation.get("page") else ""
        marker = f"[{citation['marker']}] " if citation.get("marker") else ""
        lines.append(f"- {marker}[{link_title(citation)}]({citation.get('url', '')}){page}")
    return SOURCES + "\n".join(lines) if lines else ""


def answer_markdown(record: dict[str, Any]) -> str:
    """The answer, its markers ("[S1]") made links to the sections they cite."""
    if record.get("status") == "error":
        return record.get("error_message") or "The question could not be answered."
    text = record.get("answer_text", "")
    for citation in record.get("citations") or []:
        marker, url = citation.get("marker"), citation.get("url")
        if marker and url:
            text = text.replace(f"[{marker}]", f"[[{marker}]]({url})")
    return text


def folio_field(record: dict[str, Any]) -> dict[str, Any]:
    return {"query_id": record.get("query_id"), "status": record.get("status"),
            "confidence": {"score": record.get("confidence_score"),
                           "level": record.get("confidence_level")},
            "citations": record.get("citations") or [], "notices": record.get("notices") or [],
            "reason_codes": record.get("reason_codes") or [],
            "error_message": record.get("error_message") or ""}


def completion(record: dict[str, Any], model: str) -> dict[str, Any]:
    return {"id": f"chatcmpl-{record.get('query_id', '')}", "object": "chat.completion",
            "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant",
                "content": answer_markdown(record) + sources_markdown(record)}}],
            "folio": folio_field(record)}


def chunk(ident: str, model: str, delta: dict[str, Any], finish: str | None = None,
          **extra: Any) -> bytes:
    body = {"id": ident, "object": "chat.completion.chunk", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra}
    return b"data: " + dump_json(body) + b"\n\n"


async def chunks(delivery: Delivery, model: str, ident: str) -> AsyncIterator[bytes]:
    """The answer's events as Chat Completions chunks, then [DONE]. A client that leaves is
    marked on the delivery, so the audit row says so."""
    finished = False
    try:
        yield chunk(ident, model, {"role": "assistant", "content": ""})
        shown = False
        async for event in delivery.events():
            if event.name in ("delta", "replace") and event.data["text"]:
                text = event.data["text"] if event.name == "delta" or not shown else \
                    "\n\n" + event.data["text"]  # a stream cannot take back what it sent
                shown = True
                yield chunk(ident, model, {"content": text})
            elif event.name == "final":
                record = event.data
                if record.get("status") == "error":  # whatever was sent, say why it stopped
                    rest = ("\n\n" if shown else "") + answer_markdown(record)
                else:
                    rest = ("" if shown else answer_markdown(record)) + sources_markdown(record)
                if rest:
                    yield chunk(ident, model, {"content": rest})
                yield chunk(ident, model, {}, "stop", folio=folio_field(record))
            elif event.name == "error":
                yield chunk(ident, model, {"content": event.data["message"]}, "stop")
        yield b"data: [DONE]\n\n"
        finished = True
    finally:
        if not finished:
            delivery.mark_disconnected()


def openai_router(runner_of, access_of) -> APIRouter:
    """runner_of(request) -> the runner answering; access_of(request) -> Access."""
    router = APIRouter(tags=["OpenAI-compatible"])

    @router.get("/v1/models", summary="The books this server answers from, as models",
                response_model=None, responses={200: {"model": ModelList}})
    async def models(request: Request, name: Client) -> JSONResponse:
        info = runner_of(request).info
        return JSONResponse({"object": "list", "data": [{
            "id": model_id(info), "object": "model", "owned_by": OWNER,
            "created": _created(info), "name": info.title}]})

    @router.post("/v1/chat/completions", summary="Answer the last user message (JSON, or the "
                 "chunk stream with \"stream\": true)", response_model=None, responses={
                     200: {"model": ChatCompletion, "content": {"text/event-stream": {
                         "example": 'data: {"object": "chat.completion.chunk", "choices": '
                                    '[{"delta": {"content": "The ZMP ..."}}], ...}\n\n'
                                    'data: [DONE]\n\n'}}}})
    async def chat(body: ChatRequest, request: Request, name: Client) -> Any:
        runner = runner_of(request)
        wanted = model_id(runner.info)
        if body.model != wanted:
            raise ApiError(404, "model_not_found", f"No model {body.model[:80]!r} here; this "
                           f"server answers as {wanted!r} (GET /v1/models).")
        ask = to_ask(body)
        ask = ask.model_copy(update={"question": checked_question(ask.question)})
        runner.check_room()
        await count_question(name, access_of(request))
        if body.stream:
            delivery = runner.answer_stream(ask, name)
            ident = f"chatcmpl-{int(time.time() * 1000)}"
            return StreamingResponse(chunks(delivery, wanted, ident),
                                     media_type="text/event-stream", headers=SSE_HEADERS)
        return FastJSONResponse(completion(await runner.answer(ask, name), wanted))

    return router


def _created(info: BookInfo) -> int:
    from datetime import datetime

    try:
        return int(datetime.fromisoformat(info.built_at.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0
