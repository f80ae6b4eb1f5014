"""The FastAPI application: POST /v1/ask (JSON or Server-Sent Events), POST /v1/search,
GET /v1/health, the OpenAI-compatible GET /v1/models and POST /v1/chat/completions, and the
OpenAPI docs at /docs and /redoc (served without network)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

import rag
from rag.serve.auth import Access, Client, Credentials, count_question, known_client
from rag.serve.docs import install_docs
from rag.serve.errors import ApiError, BodyLimit, install_error_handlers
from rag.serve.models import AskRequest, SearchRequest, checked_question
from rag.serve.openai_api import openai_router
from rag.serve.runner import DEFAULT_CONCURRENCY, DEFAULT_MAX_WAITING, BaseRunner, ThreadRunner
from rag.serve.schemas import ApiErrorBody, AskRecord, Health, HealthUp, SearchResult
from rag.serve.service import Service
from rag.serve.stream import EventStream, FastJSONResponse

DESCRIPTION = """Questions about one book, answered with citations from the book's stable section
IDs, exactly as the Folio app answers them (same pipeline, settings and audit log).

Send `Authorization: Bearer <key>` (keys come from `RAG_API_KEYS` or the secrets file; use
**Authorize** above). Errors are JSON: `{"error": code, "message": text}`. `POST /v1/ask` with
`"stream": true` (or `Accept: text/event-stream`) answers as Server-Sent Events: `delta` events
`{"text"}` to append while the answer is written, a `replace` event `{"text"}` when the final
text does not continue what was sent (show it instead), then one `final` event holding the whole
record, whose `answer_text` the deltas always add up to.

`/v1/models` and `/v1/chat/completions` speak OpenAI's Chat Completions, for Open WebUI,
LibreChat or the `openai` SDK (see docs/api.md)."""
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"description": text, "model": ApiErrorBody, "content": {"application/json": {
        "example": {"error": name, "message": "..."}}}}
    for code, name, text in ((400, "invalid_json", "the body is not JSON"),
                             (401, "unauthorized", "missing or invalid API key"),
                             (413, "payload_too_large", "body over 64 KB"),
                             (422, "invalid_request", "wrong fields, types or values"),
                             (429, "rate_limited", "over the client's questions per minute"),
                             (503, "server_busy", "too many questions waiting"))}
SSE_RESPONSE = {200: {"description": "the answer's record (JSON), or its events (SSE)",
                      "model": AskRecord, "content": {"text/event-stream": {"example": (
                          'event: delta\ndata: {"text": "The integral term ..."}\n\n'
                          'event: final\ndata: {"answer_text": "...", "citations": [...], '
                          '"status": "success", ...}\n\n')}}}}
HEALTH_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": Health, "description": "up; the details only with a valid key (or on a "
                                          "loopback server without keys)"},
    503: {"model": HealthUp, "description": "down: no answering process is running"}}


def check_book(asked: str | None, served: str) -> None:
    """A request that names another book than the one this server answers from is refused: its
    answer would cite the wrong book."""
    if asked and asked != served:
        raise ApiError(404, "book_not_served", f"This server answers from the book {served!r}, "
                       f"not {asked[:80]!r}; start `python -m rag serve --book {asked[:80]}` "
                       "for that book (`python -m rag books` lists the ids).")


def wants_events(request: Request, body: AskRequest) -> bool:
    return body.stream or "text/event-stream" in request.headers.get("accept", "").lower()


def create_app(answers: Service | BaseRunner, access: Access,
               concurrency: int = DEFAULT_CONCURRENCY, max_waiting: int = DEFAULT_MAX_WAITING,
               on_shutdown: Callable[[], None] | None = None,
               cors_origins: Sequence[str] = ()) -> FastAPI:
    """`answers`: a runner (rag.serve.runner), or a Service answered in threads of this process.
    on_shutdown runs after the last answer has finished, e.g. closing the audit store (uvicorn
    re-raises SIGTERM after its graceful shutdown, so code after uvicorn.run may never run)."""
    runner = answers if isinstance(answers, BaseRunner) else \
        ThreadRunner(answers, concurrency, max_waiting)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await runner.start()
        yield
        await runner.close()
        if on_shutdown is not None:
            on_shutdown()

    app = FastAPI(title="Folio API", version=rag.__version__, description=DESCRIPTION,
                  lifespan=lifespan, docs_url=None, redoc_url=None)
    app.state.access, app.state.runner = access, runner
    app.add_middleware(BodyLimit)
    if cors_origins:  # added last, so it is outermost: errors and 413s carry its headers too
        app.add_middleware(CORSMiddleware, allow_origins=list(cors_origins),
                           allow_methods=["GET", "POST"], max_age=600,
                           allow_headers=["Authorization", "Content-Type", "Accept"])
    install_error_handlers(app)
    install_docs(app)
    app.include_router(openai_router(lambda r: r.app.state.runner, lambda r: r.app.state.access))

    @app.get("/v1/health", summary="Is the server up? (with a key: which book it answers from)",
             response_model=None, responses=HEALTH_RESPONSES)
    async def health(credentials: Credentials) -> JSONResponse:
        if not runner.up:
            return JSONResponse({"status": "down"}, status_code=503)
        if known_client(credentials, access) is None:
            return JSONResponse({"status": "ok"})
        info = runner.info
        return JSONResponse({
            "status": "ok", "version": rag.__version__,
            "book": {"id": info.book_id, "title": info.title}, "chunks": info.chunks,
            "embedder": {"name": info.embedder, "model": info.embedder_model},
            "llm": info.llm, "auth": "local only" if access.open else "bearer",
            **audit_health(runner.audit),
            "answerers": runner.concurrency, "process": os.getpid()})

    @app.post("/v1/ask", summary="Answer a question (JSON, or Server-Sent Events)",
              response_model=None, responses={**ERROR_RESPONSES, **SSE_RESPONSE})
    async def ask(body: AskRequest, request: Request, name: Client) -> Any:
        question = checked_question(body.question)
        check_book(body.book, runner.info.book_id)
        runner.check_room()
        await count_question(name, access)
        body = body.model_copy(update={"question": question})
        if wants_events(request, body):
            return EventStream(runner.answer_stream(body, name))
        return FastJSONResponse(await runner.answer(body, name))

    @app.post("/v1/search", summary="Every candidate chunk with every score component",
              response_model=None, responses={**ERROR_RESPONSES, 200: {"model": SearchResult}})
    async def search(body: SearchRequest, name: Client) -> FastJSONResponse:
        question = checked_question(body.question)
        check_book(body.book, runner.info.book_id)
        runner.check_room()
        await count_question(name, access)
        return FastJSONResponse(await runner.search(question, body.top_k))

    return app


def audit_health(audit: Any) -> dict[str, Any]:
    """The audit's real state (rag.audit.state): "ok", "spooling" (answers wait on disk while
    another process holds the file), "damaged" or "failing", with what waits in the spool; "off"
    when this server keeps no audit."""
    if audit is None:
        return {"audit": "off"}
    state = audit.state()
    return {"audit": state.code, "audit_detail": state.message,
            "audit_spooled_bytes": state.spooled_bytes, "audit_quarantined": state.quarantined}
