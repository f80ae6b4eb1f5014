"""Every failure as a JSON body {"error": code, "message": ...}: bad JSON, wrong fields, a body
too large, a missing key, a rate limit, an unexpected fault (logged here, never sent)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("rag.serve")
MAX_BODY_BYTES = 64 * 1024
# A chat client sends the whole conversation each time (only its last turns are used).
LARGER_BODIES = {"/v1/chat/completions": 1024 * 1024}
OPENAI_PATHS = ("/v1/models", "/v1/chat/completions")
STATUS_CODES = {400: "bad_request", 401: "unauthorized", 404: "not_found",
                405: "method_not_allowed", 408: "request_timeout", 413: "payload_too_large",
                415: "unsupported_media_type", 422: "invalid_request", 429: "rate_limited",
                503: "server_busy"}
STATUS_MESSAGES = {
    404: "No such endpoint; see /docs for POST /v1/ask, POST /v1/search and GET /v1/health.",
    405: "This endpoint does not take that method; see /docs.",
    408: "The request body took too long to arrive; send it again.",
}
BODY_TIMEOUT_S = 30.0  # a slow client's whole body; its request head has its own (rag.serve.server)
INTERNAL_MESSAGE = "The server failed to answer this request; the error is in its log."
JSON_EXAMPLE = '{"question": "What is the zero moment point?"}'


def too_large(limit: int) -> str:
    return (f"The request body is larger than {limit // 1024} KB; send a shorter question, "
            "selection or history.")


class ApiError(Exception):
    """A refusal with its HTTP status, error code, message and headers."""

    def __init__(self, status: int, code: str, message: str,
                 headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers = dict(headers or {})


def error_response(status: int, code: str, message: str,
                   headers: Mapping[str, str] | None = None, path: str = "") -> JSONResponse:
    """{"error": code, "message": ...}; on the OpenAI-compatible paths OpenAI's own shape,
    {"error": {"message", "type", "code"}}, which its SDKs and Open WebUI show."""
    body: dict[str, Any] = {"error": code, "message": message}
    if path in OPENAI_PATHS:
        body = {"error": {"message": message, "type": code, "code": code, "param": None}}
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def _where(loc: Sequence[Any]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts)


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "application/json").split(";")[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def validation_response(request: Request, errors: Sequence[dict[str, Any]]) -> JSONResponse:
    """400 for a body that is not JSON, 415 for another content type, 422 for wrong fields."""
    path = request.url.path
    for error in errors:
        if error.get("type") == "json_invalid":
            detail = (error.get("ctx") or {}).get("error", "JSON decode error")
            position = error.get("loc", ("body", "?"))[-1]
            return error_response(400, "invalid_json", f"The request body is not valid JSON "
                                  f"({detail} at character {position}); send an object such as "
                                  f"{JSON_EXAMPLE}.", path=path)
    if not _is_json(request):
        return error_response(415, "unsupported_media_type", "Send the body as JSON with the "
                              "header Content-Type: application/json.", path=path)
    problems = []
    for error in errors:
        where = _where(error.get("loc", ()))
        if error.get("type") == "missing" and not where:
            problems.append(f"the request body is missing; send {JSON_EXAMPLE}")
        elif error.get("type") in ("model_type", "model_attributes_type") and not where:
            problems.append(f"the request body must be a JSON object such as {JSON_EXAMPLE}")
        else:
            problems.append(f"{where or 'body'}: {error.get('msg', 'invalid value')}")
    return error_response(422, "invalid_request", "; ".join(problems) + ".", path=path)


class BodyLimit:
    """413 for a body over its path's limit: at once when Content-Length says so (nothing is
    read), else as soon as the bytes received pass the limit (a chunked or lying client); 408
    when the body trickles in slower than `body_timeout_s` for the whole of it."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES,
                 body_timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app, self.max_bytes, self.body_timeout_s = app, max_bytes, body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = LARGER_BODIES.get(scope.get("path", ""), self.max_bytes)
        declared = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            response = error_response(413, "payload_too_large", too_large(limit),
                                      {"Connection": "close"}, scope.get("path", ""))
            await response(scope, receive, send)
            return
        received, more = 0, True
        deadline = time.monotonic() + self.body_timeout_s

        async def limited() -> Message:
            nonlocal received, more
            if not more:  # the body is in: what follows is http.disconnect, whenever it comes
                return await receive()
            try:
                with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                    message = await receive()
            except TimeoutError:
                raise HTTPException(408) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                more = bool(message.get("more_body"))
                if received > limit:
                    # an HTTPException passes FastAPI's body reading unchanged, to http_error
                    raise HTTPException(413, too_large(limit))
            return message

        await self.app(scope, limited, send)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message, exc.headers, request.url.path)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_response(request, exc.errors())

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        status = exc.status_code
        message = STATUS_MESSAGES.get(status) or str(exc.detail)
        return error_response(status, STATUS_CODES.get(status, f"http_{status}"), message,
                              getattr(exc, "headers", None), request.url.path)

    @app.exception_handler(Exception)
    async def fault(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        return error_response(500, "internal_error", INTERNAL_MESSAGE, path=request.url.path)
