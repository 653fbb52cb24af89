"""Hostile requests against a real console (aiohttp test server, real learner): malformed bodies get
400/413 with a message and no traceback, and other sites can neither read the feed nor change anything."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from aioseed.console import server as console_server
from tests.conftest import small_config

TOKEN = "test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EVIL = "http://evil.example"


@contextlib.asynccontextmanager
async def console(running_learner, tmp_path, allowed_hosts: tuple[str, ...] = ()) -> AsyncIterator[tuple]:
    async with running_learner(small_config(tmp_path, console={"enabled": False})) as learner:
        app = console_server.init(learner, TOKEN, reading_needs_token=False, allowed_hosts=allowed_hosts)
        async with TestClient(TestServer(app)) as client:
            yield learner, client


@pytest.fixture
def server_errors(caplog) -> list[logging.LogRecord]:
    """Error records of aiohttp's server: where a handler's unhandled exception and traceback go."""
    caplog.set_level(logging.ERROR, logger="aiohttp")
    return caplog.records


MALFORMED = [
    ({"Content-Type": "application/json"}, b'{"max_batch_size": ' + b"9" * 400 + b"}", 400, "finite number"),
    ({"Content-Type": "application/json"}, b"[" * 100_000 + b"]" * 100_000, 413, "larger than 65536 bytes"),
    ({"Content-Type": "application/json"}, b"[" * 30_000 + b"]" * 30_000, 400, "nested too deeply"),
    ({"Content-Type": "application/json; charset=no-such-charset"}, b'{"deadline_ms": 1}', 400, "unknown charset"),
    ({"Content-Type": "application/json; charset=utf-8"}, b'{"deadline_ms": "\xff\xfe"}', 400, "not valid utf-8"),
    ({"Content-Type": "application/json; charset=undefined"}, b'{"deadline_ms": 1}', 400, "not valid undefined"),
    ({"Content-Type": "application/json"}, b'{"learning_rate": NaN}', 400, "must be JSON"),
    ({"Content-Type": "application/json"}, b'{"learning_rate": 1e999}', 400, "finite number"),
    ({"Content-Type": "application/json"}, b'{"' + b"x" * 50_000 + b'": 1}', 400, "is not a live setting"),
]


@pytest.mark.parametrize(("headers", "body", "status", "message"), MALFORMED, ids=lambda v: str(v)[:24])
async def test_malformed_bodies_get_a_client_error_and_no_traceback(
    running_learner, tmp_path, server_errors, headers, body, status, message
) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        before = learner.settings()
        response = await client.post("/api/settings", data=body, headers={**AUTH, **headers})
        text = await response.text()
        assert response.status == status, text
        assert message in text and "Traceback" not in text and len(text) < 500
        assert learner.settings() == before
    assert [r for r in server_errors if r.name.startswith("aiohttp")] == []


async def test_the_feed_needs_the_token(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (_, client):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect("/api/feed")
        assert refused.value.status == 401
        async with client.ws_connect("/api/feed", params={"token": TOKEN}) as ws:
            assert "settings" in await ws.receive_json(timeout=5)


async def test_another_origin_can_neither_open_the_feed_nor_change_anything(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path) as (learner, client):
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect("/api/feed", params={"token": TOKEN}, origin=EVIL)
        assert refused.value.status == 403
        for path in ("/api/pause", "/api/checkpoint"):
            response = await client.post(path, headers={**AUTH, "Origin": EVIL})
            assert response.status == 403 and "cross-origin" in (await response.json())["error"], path
        assert not learner.paused
        null = await client.post("/api/pause", headers={**AUTH, "Origin": "null"})
        assert null.status == 403 and not learner.paused
        # The console's own page (same scheme, host and port) is let through.
        own = f"http://{client.host}:{client.port}"
        assert (await client.post("/api/pause", headers={**AUTH, "Origin": own})).status == 200
        async with client.ws_connect("/api/feed", params={"token": TOKEN}, origin=own) as ws:
            assert (await ws.receive_json(timeout=5))["settings"]["paused"] is True


async def test_a_foreign_host_header_gets_400_against_dns_rebinding(running_learner, tmp_path) -> None:
    async with console(running_learner, tmp_path, allowed_hosts=("console.lan",)) as (_, client):
        port = client.port
        for host in (f"rebind.evil.example:{port}", f"console.lan.evil.example:{port}"):
            response = await client.get("/api/metrics", headers={"Host": host})
            assert response.status == 400 and "not a name of this console" in (await response.json())["error"]
        for host in (f"console.lan:{port}", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
            assert (await client.get("/api/metrics", headers={"Host": host})).status == 200, host


async def test_a_token_header_of_undecodable_bytes_gets_401_not_a_server_error(running_learner, tmp_path, server_errors) -> None:
    import asyncio

    async with console(running_learner, tmp_path) as (learner, client):
        reader, writer = await asyncio.open_connection(client.host, client.port)
        writer.write(
            b"POST /api/pause HTTP/1.1\r\nHost: " + f"{client.host}:{client.port}".encode()
            + b"\r\nAuthorization: Bearer \xff\xfe\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        status = await asyncio.wait_for(reader.readline(), 10)
        writer.close()
        assert status.split()[1] == b"401", status
        assert not learner.paused
    assert [r for r in server_errors if r.name.startswith("aiohttp")] == []


async def test_a_taken_console_port_leaves_no_grpc_port_serving(tmp_path) -> None:
    """The learner's start failed at the console after the gRPC server had started, and left it running."""
    import socket

    from aioseed.compose.learner import build
    from aioseed.errors import PortTaken

    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        learner = build(small_config(tmp_path, console={"port": holder.getsockname()[1]}))
        with pytest.raises(PortTaken):
            await learner.start()
    assert learner.port is not None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", learner.port))  # free again
