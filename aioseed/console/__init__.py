"""The web console: live metrics and control of a running learner (aiohttp + ``web/``)."""

from aioseed.console.server import ConsoleServer

__all__ = ["ConsoleServer"]
