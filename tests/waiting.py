"""Bounded polling for tests: wait until a condition holds, or fail saying what was awaited."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable


async def until(predicate: Callable[[], bool | Awaitable[bool]], what: str, attempts: int = 1000) -> None:
    """Polls ``predicate`` (plain or async) every 10 ms, at most ``attempts`` times."""
    for _ in range(attempts):
        result = predicate()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")
