"""Actor processes on this machine (``aioseed run``'s default launch): spawned, watched and stopped."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from typing import TYPE_CHECKING

from aioseed.clients.actor import ActorConfig
from aioseed.commands.launchers.stop import stop_without_actors

if TYPE_CHECKING:
    from aioseed.commands.launchers import Stop
    from aioseed.server.learner import Learner


async def launch(configs: list[ActorConfig], learner: Learner, group: asyncio.TaskGroup) -> Stop:
    """Spawns one process per actor and watches the training ones in ``group``."""
    processes = start_actors(configs)
    training = [process for process, actor in zip(processes, configs) if not actor.evaluation]
    if training:
        group.create_task(watch_actors(training, learner), name="actor-watch")

    async def stop() -> None:
        await asyncio.to_thread(stop_actors, processes)

    return stop


def _actor_process(config: ActorConfig, parent: int, level: str) -> None:
    """Entry point of a spawned local actor process: ``aioseed actor`` until its parent is gone."""
    import uvloop

    from aioseed import log as logging_setup
    from aioseed.commands.actor import act

    logging_setup.configure(level)
    if config.architecture == "impala":  # the actor runs the policy itself
        from aioseed.tf_start import start_tensorflow

        start_tensorflow()

    async def main() -> int:
        async def watch_parent() -> None:
            while os.getppid() == parent:
                await asyncio.sleep(1.0)
            os.kill(os.getpid(), signal.SIGTERM)

        watcher = asyncio.create_task(watch_parent())
        try:
            return await act(config)
        finally:
            watcher.cancel()

    raise SystemExit(uvloop.run(main()))


def start_actors(configs: list[ActorConfig], level: str = "warning") -> list[multiprocessing.process.BaseProcess]:
    """Starts actor processes with spawn: safe next to gRPC and TensorFlow threads."""
    context = multiprocessing.get_context("spawn")
    processes: list[multiprocessing.process.BaseProcess] = []
    try:
        for config in configs:
            process = context.Process(target=_actor_process, args=(config, os.getpid(), level), name=config.name)
            process.start()
            processes.append(process)
    except BaseException:  # out of processes or memory: the ones already started would outlive the run
        stop_actors(processes)
        raise
    return processes


def stop_actors(processes: list[multiprocessing.process.BaseProcess], timeout_s: float = 10.0) -> None:
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout_s)
        if process.is_alive():
            process.kill()
            process.join()


async def watch_actors(processes: list[multiprocessing.process.BaseProcess], learner: Learner) -> None:
    """Stops the learner once every training actor process has exited (an env that crashes them, a refusal).
    A stop already under way (which ends the actors) is left alone."""
    while any(process.is_alive() for process in processes):  # reaps, never blocks
        await asyncio.sleep(1.0)
    stop_without_actors(learner, [f"{process.name}: exit code {process.exitcode}" for process in processes])
