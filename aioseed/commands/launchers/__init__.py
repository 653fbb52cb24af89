"""How ``aioseed run`` starts its local actors: one strategy per module, behind ``launch_actors``.

- ``processes``: spawned actor processes on loopback (the default);
- ``ray_fleet``: Ray actors on a Ray instance started on this machine (``--launcher ray``);
- ``threads``: Sebulba's env threads inside the learner's process (``--architecture sebulba``).

Each ``launch`` starts its actors, watches the training ones (the learner stops once they have all exited:
``stop.ACTORS_EXITED``) and returns what stops them. Strategies are imported when chosen: an actor process
spawned by ``processes`` loads none of the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal

from aioseed.clients.actor import ActorConfig

if TYPE_CHECKING:
    from aioseed.server.learner import Learner

Strategy = Literal["processes", "ray", "threads"]
"""A module of this package each: ``processes``, ``ray_fleet``, ``threads``."""

Stop = Callable[[], Awaitable[None]]
"""Stops a launch's actors (safe to call twice)."""


async def launch_actors(strategy: Strategy, configs: list[ActorConfig], learner: Learner, group: asyncio.TaskGroup) -> Stop:
    """Starts the local actors ``configs`` by ``strategy``, their watch in ``group``; returns what stops them."""
    if strategy == "threads":
        from aioseed.commands.launchers import threads as launcher
    elif strategy == "ray":
        from aioseed.commands.launchers import ray_fleet as launcher
    else:
        from aioseed.commands.launchers import processes as launcher
    return await launcher.launch(configs, learner, group)
