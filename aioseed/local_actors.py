"""Actors on this machine for ``aioseed run``: spawned processes, started, watched and stopped; and the entry
point that runs either kind of actor (SEED's, or IMPALA mode's)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
from typing import TYPE_CHECKING

import structlog

from aioseed.clients.actor import ActorConfig

if TYPE_CHECKING:
    from aioseed.clients.fleet import RayFleet
    from aioseed.server.learner import Learner

log = structlog.get_logger()


def _actor_process(config: ActorConfig, parent: int, level: str) -> None:
    """Entry point of a spawned local actor process."""
    import uvloop

    from aioseed import log as logging_setup

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
            return await run_any_actor(config)
        finally:
            watcher.cancel()

    raise SystemExit(uvloop.run(main()))


async def run_any_actor(config: ActorConfig) -> int:
    """``aioseed actor``: SEED's actor, or IMPALA mode's (which loads TensorFlow, so only then)."""
    if config.architecture == "impala":
        from aioseed.impala_actor.actor import run_impala_actor

        return await run_impala_actor(config)
    from aioseed.clients.actor import run_actor

    return await run_actor(config)


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


ACTORS_EXITED = "actors exited"
"""The stop reason when every local actor process has exited (``aioseed run`` then exits 1)."""


async def watch_actors(processes: list[multiprocessing.process.BaseProcess], learner: Learner) -> None:
    """Stops the learner once every training actor process has exited (an env that crashes them, a refusal):
    it would wait for frames that never come. A stop already under way (which ends the actors) is left alone."""
    while any(process.is_alive() for process in processes):  # reaps, never blocks
        await asyncio.sleep(1.0)
    stop_without_actors(learner, [f"{process.name}: exit code {process.exitcode}" for process in processes])


async def watch_fleet(fleet: RayFleet, learner: Learner) -> None:
    """As ``watch_actors``, for the training actors of a Ray fleet: once each is done or given up (its restarts
    spent)."""
    training = [i for i, config in enumerate(fleet.configs) if not config.evaluation]
    if training:
        codes = await fleet.wait(training)
        stop_without_actors(learner, [f"{fleet.configs[i].name}: exit code {code}" for i, code in zip(training, codes)])


def stop_without_actors(learner: Learner, actors: list[str]) -> None:
    if learner.stopping.reason is None:
        log.error("actors_exited", actors=actors, hint="their errors are above")
        learner.request_stop(ACTORS_EXITED)
