"""Console access: the token, the Host header and the Origin of browser requests.

* Control (any method but GET) and the live feed always need the token; every
  other read needs it too when the console listens off loopback.
* The Host header must name the console (an IP literal, ``localhost`` or one of
  ``allowed_hosts``): a DNS-rebinding page reaches the console under its own
  name and gets 400.
* A request that states an Origin must come from the console's own origin to
  open the feed or change anything: another site's page gets 403.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Collection, Mapping

import yarl
from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

FEED = "/api/feed"
WHO = web.RequestKey("who", str)
"""The request's key for the name of the token it came with."""
LOCAL = "local"
"""The name of the console's own token."""


def new_token() -> str:
    """An unguessable token (192 random bits)."""
    return secrets.token_urlsafe(24)


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


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


def _error(kind: type[web.HTTPException], message: str) -> web.HTTPException:
    import json

    return kind(text=json.dumps({"error": message}), content_type="application/json")


def _authority(url: yarl.URL) -> tuple[str, int | None]:
    return (url.host or "").lower(), url.port


def holder(given: str, tokens: Mapping[str, str]) -> str | None:
    """The name of the token ``given`` matches among ``tokens`` ({token: name}), each compared in constant time."""
    # aiohttp keeps a header's undecodable bytes as surrogates: encoded back as they came, they never match.
    presented = given.encode("utf-8", "surrogateescape")
    matches = [name for token, name in tokens.items() if hmac.compare_digest(presented, token.encode())]
    return matches[0] if matches else None


def middleware(token: str, reading_needs_token: bool, allowed_hosts: Collection[str] = (), named: Mapping[str, str] | None = None) -> Callable:
    """401 without a token where one is needed, 400 for a foreign Host, 403 for a foreign Origin. A request with a
    token carries its holder's name as ``request[WHO]``: ``local`` for ``token``, else its name in ``named``
    ({token: name}).

    ``allowed_hosts``: host names (besides IP literals and ``localhost``) the console answers to;
    ``*`` turns the Host check off (e.g. behind a reverse proxy that checks it).
    """
    names = {name.lower() for name in allowed_hosts} | {"localhost"}
    tokens = {**(named or {}), token: LOCAL}

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            own = yarl.URL.build(scheme=request.scheme, authority=request.host)
        except ValueError:
            raise _error(web.HTTPBadRequest, "malformed Host header") from None
        host = (own.host or "").lower()
        if "*" not in names and host not in names and not is_ip(host):
            raise _error(
                web.HTTPBadRequest,
                f"Host {host[:64]!r} is not a name of this console (add it with --console.allowed-hosts, under aioseed run --learner.console.allowed-hosts)",
            )
        changes = request.method not in ("GET", "HEAD", "OPTIONS")
        feed = request.path == FEED
        origin = request.headers.get("Origin")
        if origin is not None and (changes or feed):
            try:
                theirs = yarl.URL(origin)
            except ValueError:
                theirs = None
            if theirs is None or theirs.scheme != own.scheme or _authority(theirs) != _authority(own):
                raise _error(web.HTTPForbidden, f"cross-origin request from {origin[:64]!r} refused")
        is_data = request.path.startswith("/api/") or request.path == "/metrics"
        if changes or feed or (reading_needs_token and is_data):
            given = presented_token(request)
            who = None if given is None else holder(given, tokens)
            if who is None:
                raise _error(web.HTTPUnauthorized, "missing or wrong console token")
            request[WHO] = who
        return await handler(request)

    return check
