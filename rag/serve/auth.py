"""Who is asking: a bearer token's client name (or "local" when the server has no keys and so
listens on loopback only), and whether that client is within its rate limit.

FastAPI's HTTPBearer reads the Authorization header and puts the scheme in the OpenAPI schema
(the Authorize button of /docs). What it cannot do stays here: the constant-time lookup among
token digests (rag.access.keys), one identical 401 body whatever was wrong, the loopback server
without keys, and the rate limit."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Annotated, Protocol

import anyio
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from rag.access.ratelimit import RateLimiter
from rag.serve.errors import ApiError
from rag.types import LOCAL_CLIENT

UNAUTHORIZED = "missing or invalid API key; send the header Authorization: Bearer <your key>"
LOCAL_NAMES = ("localhost",)
bearer_scheme = HTTPBearer(auto_error=False, scheme_name="apiKey", description=(
    "An API key from RAG_API_KEYS or the secrets file; a server without keys listens on "
    "loopback only and needs none."))
Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(bearer_scheme)]


class Keys(Protocol):
    def __len__(self) -> int: ...

    def client_for(self, token: str | None) -> str | None: ...


@dataclass(frozen=True)
class Access:
    keys: Keys  # rag.access.keys.ApiKeys, or LiveKeys (re-read when the secrets file changes)
    limiter: RateLimiter | None = None  # None: no limit
    # Decided once, at start: a server started with keys never opens up when the file is
    # emptied later (every request is then refused).
    open: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "open", len(self.keys) == 0)


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: a host only this machine can reach."""
    name = host.strip().strip("[]").lower()
    if name in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def known_client(credentials: HTTPAuthorizationCredentials | None, access: Access
                 ) -> str | None:
    """The client a request's credentials name; None when missing or unknown."""
    if access.open:
        return LOCAL_CLIENT
    return access.keys.client_for(credentials.credentials if credentials else None)


def authenticate(credentials: HTTPAuthorizationCredentials | None, access: Access) -> str:
    """The client name for the request's token; 401 with the same body whether the token is
    missing, malformed or unknown, so a caller learns nothing about which keys exist."""
    client = known_client(credentials, access)
    if client is None:
        raise ApiError(401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
    return client


def client_name(request: Request, credentials: Credentials) -> str:
    return authenticate(credentials, request.app.state.access)


Client = Annotated[str, Depends(client_name)]


async def count_question(client: str, access: Access) -> None:
    """Count one question against the client's limit (429 when over it). The limiter waits on
    a file shared with other processes, so it runs off the event loop."""
    if access.limiter is None:
        return
    decision = await anyio.to_thread.run_sync(access.limiter.check, client)
    if not decision.allowed:
        raise ApiError(429, "rate_limited", decision.message(), {
            "Retry-After": str(max(1, decision.retry_after_s)),
            "RateLimit-Limit": str(decision.limit), "RateLimit-Remaining": "0"})
