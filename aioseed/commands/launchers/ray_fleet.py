"""Ray actors on a Ray instance started on this machine (``--launcher ray``; Ray restarts actors that die)."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from aioseed.clients.actor import ActorConfig
from aioseed.clients.fleet import RayFleet
from aioseed.commands.launchers.stop import stop_without_actors

if TYPE_CHECKING:
    from aioseed.commands.launchers import Stop
    from aioseed.server.learner import Learner


async def launch(configs: list[ActorConfig], learner: Learner, group: asyncio.TaskGroup) -> Stop:
    """Starts the fleet and watches it in ``group``."""
    # Ray's CPUs are a placement budget: the local actors share this machine's with the learner.
    fleet = RayFleet(configs, "local", cpus_per_actor=min(1.0, (os.cpu_count() or 1) / len(configs)), level="warning")
    try:
        await fleet.start()
    except BaseException:
        await fleet.stop()
        raise
    watching = group.create_task(watch(fleet, learner), name="actor-watch")

    async def stop() -> None:
        watching.cancel()  # before its members are ended: their runs would count as given up
        await fleet.stop()

    return stop


async def watch(fleet: RayFleet, learner: Learner) -> None:
    """Stops the learner once each training actor of ``fleet`` is done or given up (its restarts spent)."""
    training = [i for i, config in enumerate(fleet.configs) if not config.evaluation]
    if training:
        codes = await fleet.wait(training)
        stop_without_actors(learner, [f"{fleet.configs[i].name}: exit code {code}" for i, code in zip(training, codes)])
