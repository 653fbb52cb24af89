"""Console access: a token for control always, and for reading too off loopback."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """An unguessable token (192 random bits)."""
    return secrets.token_urlsafe(24)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def presented_token(request: web.Request) -> str | None:
    """``Authorization: Bearer T``, or ``?token=T`` for the WebSocket feed (browsers cannot set its headers)."""
    header = request.headers.get("Authorization", "")
    if header.startswith("Bearer "):
        return header[len("Bearer ") :]
    return request.query.get("token")


def middleware(token: str, reading_needs_token: bool) -> Callable:
    """401 for control requests (POST) without the token, and for reads when ``reading_needs_token``."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        is_data = request.path.startswith("/api/") or request.path == "/metrics"
        needs = request.method != "GET" or (reading_needs_token and is_data)
        if needs:
            given = presented_token(request)
            if given is None or not hmac.compare_digest(given.encode(), token.encode()):
                raise web.HTTPUnauthorized(
                    text='{"error": "missing or wrong console token"}', content_type="application/json"
                )
        return await handler(request)

    return check
