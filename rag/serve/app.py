"""The FastAPI application: POST /v1/ask (JSON or Server-Sent Events), POST /v1/search,
GET /v1/health, and the OpenAPI docs at /docs."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse

import rag
from rag.errors import InputError
from rag.retrieval.query import validate_query
from rag.serve.auth import Access, authenticate, count_question
from rag.serve.errors import MAX_BODY_BYTES, ApiError, BodyLimit, install_error_handlers
from rag.serve.models import AskRequest, SearchRequest
from rag.serve.runner import DEFAULT_CONCURRENCY, DEFAULT_MAX_WAITING, Runner
from rag.serve.service import Service

DESCRIPTION = """Questions about one book, answered with citations from the book's stable section
IDs, exactly as the Folio app answers them (same pipeline, settings and audit log).

Send `Authorization: Bearer <key>` (keys come from `RAG_API_KEYS`). Errors are JSON:
`{"error": code, "message": text}`. `POST /v1/ask` with `"stream": true` (or
`Accept: text/event-stream`) answers as Server-Sent Events: `delta` events `{"text"}` while the
answer is written, then one `final` event holding the whole record."""
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"description": text, "content": {"application/json": {"example": {
        "error": name, "message": "..."}}}}
    for code, name, text in ((400, "invalid_json", "the body is not JSON"),
                             (401, "unauthorized", "missing or invalid API key"),
                             (413, "payload_too_large", "body over 64 KB"),
                             (422, "invalid_request", "wrong fields, types or values"),
                             (429, "rate_limited", "over the client's questions per minute"),
                             (503, "server_busy", "too many questions waiting"))}
SSE_RESPONSE = {200: {"description": "the answer's record (JSON), or its events (SSE)",
                      "content": {"text/event-stream": {"example": (
                          'event: delta\ndata: {"text": "The integral term ..."}\n\n'
                          'event: final\ndata: {"answer_text": "...", "citations": [...], '
                          '"status": "success", ...}\n\n')}}}}


def checked_question(question: str) -> str:
    try:
        return validate_query(question)
    except InputError as e:
        raise ApiError(422, "invalid_question", str(e)) from None


def wants_events(request: Request, body: AskRequest) -> bool:
    return body.stream or "text/event-stream" in request.headers.get("accept", "").lower()


def client_name(request: Request) -> str:
    return authenticate(request, request.app.state.access)


Client = Annotated[str, Depends(client_name)]


def create_app(service: Service, access: Access, concurrency: int = DEFAULT_CONCURRENCY,
               max_waiting: int = DEFAULT_MAX_WAITING,
               on_shutdown: Callable[[], None] | None = None) -> FastAPI:
    """on_shutdown runs after the last answer has finished, e.g. closing the audit store (uvicorn
    re-raises SIGTERM after its graceful shutdown, so code after uvicorn.run may never run)."""
    holder: dict[str, Runner] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        holder["runner"] = Runner(concurrency, max_waiting)  # its limiter belongs to this loop
        yield
        await holder["runner"].drain()
        if on_shutdown is not None:
            on_shutdown()

    app = FastAPI(title="Folio API", version=rag.__version__, description=DESCRIPTION,
                  lifespan=lifespan)
    app.state.access = access
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES)
    install_error_handlers(app)

    @app.get("/v1/health", summary="Is the server up, and which book does it answer from?")
    async def health() -> dict[str, Any]:
        return service.health("local only" if access.open else "bearer")

    @app.post("/v1/ask", summary="Answer a question (JSON, or Server-Sent Events)",
              responses={**ERROR_RESPONSES, **SSE_RESPONSE})
    async def ask(body: AskRequest, request: Request, name: Client) -> Any:
        question = checked_question(body.question)
        runner = holder["runner"]
        runner.check_room()
        await count_question(name, access)
        body = body.model_copy(update={"question": question})
        if wants_events(request, body):
            return runner.stream(service.answer, body, name)
        return JSONResponse(await runner.run(service.answer, body, name))

    @app.post("/v1/search", summary="Every candidate chunk with every score component",
              responses=ERROR_RESPONSES)
    async def search(body: SearchRequest, name: Client) -> dict[str, Any]:
        question = checked_question(body.question)
        runner = holder["runner"]
        runner.check_room()
        await count_question(name, access)
        return await runner.run(service.search, question, body.top_k)

    return app
