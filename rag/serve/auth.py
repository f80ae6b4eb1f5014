"""Who is asking: a bearer token's client name (or "local" when the server has no keys and so
listens on loopback only), and whether that client is within its rate limit."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import anyio
from fastapi import Request

from rag.access.keys import ApiKeys
from rag.access.ratelimit import RateLimiter
from rag.serve.errors import ApiError
from rag.types import LOCAL_CLIENT

UNAUTHORIZED = "missing or invalid API key; send the header Authorization: Bearer <your key>"
LOCAL_NAMES = ("localhost",)


@dataclass(frozen=True)
class Access:
    keys: ApiKeys
    limiter: RateLimiter | None = None  # None: no limit

    @property
    def open(self) -> bool:
        """No keys configured: every request is the local client (loopback-only server)."""
        return len(self.keys) == 0


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or localhost: a host only this machine can reach."""
    name = host.strip().strip("[]").lower()
    if name in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


def authenticate(request: Request, access: Access) -> str:
    """The client name for the request's token; 401 with the same body whether the token is
    missing, malformed or unknown, so a caller learns nothing about which keys exist."""
    if access.open:
        return LOCAL_CLIENT
    client = access.keys.client_for(bearer_token(request))
    if client is None:
        raise ApiError(401, "unauthorized", UNAUTHORIZED, {"WWW-Authenticate": "Bearer"})
    return client


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
