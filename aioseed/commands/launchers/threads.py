"""Sebulba's actors: env threads inside the learner's process that hand their rows to its batcher, no gRPC."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aioseed.clients.actor import ActorConfig
from aioseed.clients.threads import ThreadedActor
from aioseed.commands.launchers.stop import stop_without_actors

if TYPE_CHECKING:
    from aioseed.commands.launchers import Stop
    from aioseed.server.learner import Learner


async def launch(configs: list[ActorConfig], learner: Learner, group: asyncio.TaskGroup) -> Stop:
    """One task per actor in ``group``; the learner stops once every training one has ended."""
    actors = [await asyncio.to_thread(ThreadedActor, actor, learner) for actor in configs]  # makes envs: off the loop
    tasks = [group.create_task(actor.run(), name=actor.name) for actor in actors]
    training = [task for task, actor in zip(tasks, actors) if not actor.config.evaluation]

    async def watch() -> None:
        await asyncio.wait(training)
        stop_without_actors(learner, [task.get_name() for task in training])

    if training:
        group.create_task(watch(), name="actor-watch")

    async def stop() -> None:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    return stop
