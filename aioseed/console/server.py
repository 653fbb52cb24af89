"""The console server: aiohttp on ``AppRunner``/``TCPSite``, started and stopped by the learner (any ``Control``)."""

from __future__ import annotations

import pathlib
from collections.abc import Collection, Mapping

import structlog
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from aioseed.console import api, auth, prometheus
from aioseed.control import Control
from aioseed.errors import PortTaken

log = structlog.get_logger()

def assets() -> pathlib.Path:
    """The page's assets: ``aioseed/web`` in an installed wheel, else the checkout's top-level ``web/``.

    uPlot comes from ``web/node_modules`` (``npm ci --prefix web``, which ``make`` runs before a build).
    """
    package = pathlib.Path(__file__).resolve().parents[1]
    packaged = package / "web"
    return packaged if (packaged / "index.html").is_file() else package.parent / "web"


WEB = assets()


class AccessLogger(AbstractAccessLogger):
    """Method, path (never the query, which may carry the token), status and duration."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        structlog.get_logger().debug(
            "console_request", method=request.method, path=request.path, status=response.status, ms=round(time * 1e3, 2)
        )


def init(
    control: Control, token: str, reading_needs_token: bool, allowed_hosts: Collection[str] = (), named: Mapping[str, str] | None = None
) -> web.Application:
    """``named``: more tokens, {token: name} (``--console.tokens-file``)."""
    app = web.Application(
        middlewares=[auth.middleware(token, reading_needs_token, allowed_hosts, named)], client_max_size=api.MAX_BODY_BYTES
    )
    app[api.CONTROL] = control
    api.add_routes(app)
    app.router.add_get("/metrics", prometheus.handler(control.metrics))
    app.router.add_get("/", _index)
    app.router.add_static("/static/", WEB)
    uplot = WEB / "node_modules" / "uplot" / "dist"
    if uplot.is_dir():
        app.router.add_static("/vendor/uplot/", uplot)
    return app


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(WEB / "index.html")


class ConsoleServer:
    """Verbs: ``start`` (returns the URL, token in the fragment), ``stop``."""

    def __init__(
        self, control: Control, host: str, port: int, token: str | None, allowed_hosts: Collection[str] = (),
        named: Mapping[str, str] | None = None,
    ) -> None:
        self.host = host
        self.token = token or auth.new_token()
        self.reading_needs_token = not auth.is_loopback(host)
        app = init(control, self.token, self.reading_needs_token, allowed_hosts, named)
        self._runner = web.AppRunner(app, access_log_class=AccessLogger, handle_signals=False)
        self._port = port
        self.port: int | None = None

    async def start(self) -> str:
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self._port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise PortTaken(f"the console cannot listen on {self.host}:{self._port} ({exc.strerror}): --console.port 0 picks a free port") from None
        self.port = self._runner.addresses[0][1]
        url = f"http://{self.host}:{self.port}/#token={self.token}"
        log.info("console_listening", url=url)
        return url

    async def stop(self) -> None:
        await self._runner.cleanup()
