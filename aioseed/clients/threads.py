"""Sebulba's actors (Podracer, Hessel et al. 2021): env groups stepped in threads of the learner's own
process, their rows handed to its batcher as arrays. No serialization, no sockets; the batcher,
inference, unroll store and trainer are the ones the gRPC streams feed.

Each group of ``envs_per_message`` envs has its own thread, so env stepping (NumPy's vector CartPole,
ale-py's C++ vector env: both release the GIL for their heavy parts) runs beside inference and training.

Their failures stay theirs, as a remote actor's would: a batch the policy failed on reopens the group's
stream with backoff (a gRPC actor reconnects after INTERNAL), and an env that raises stops its group
only, never the learner whose task group runs them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from typing import Protocol

import numpy as np
import structlog
import tenacity

from aioseed.clients.actor import ActorConfig, Attempt
from aioseed.clients.env_group import EnvGroup, env_groups
from aioseed.spec import EnvSpec
from aioseed.types import Rows

log = structlog.get_logger()


class LocalStream(Protocol):
    slots: np.ndarray

    async def act(self, rows: Rows) -> np.ndarray:
        """Actions for rows of ``slots``."""
        ...

    def close(self) -> None: ...


class LocalPort(Protocol):
    """Where in-process actors attach (``aioseed.server.service.LearnerService.open_local``)."""

    def open_local(
        self, spec: EnvSpec, run_ids: np.ndarray, actor: str, evaluation: bool = False, previous: np.ndarray = ...
    ) -> LocalStream:
        """``previous``: the slots a reopened stream held, granted again where they are free (as a Hello's)."""
        ...


class Unanswered(Exception):
    """The learner did not answer a group's rows (its policy failed on them); the group opens a new stream."""


class ThreadedActor:
    """Verbs: ``run`` until cancelled or ``max_steps``."""

    def __init__(self, config: ActorConfig, port: LocalPort) -> None:
        self.config = config
        self.name = config.name or f"sebulba:{os.getpid()}"
        self._port = port
        self.spec, self.run_ids, self.groups = env_groups(config)

    @property
    def steps(self) -> int:
        return sum(group.steps for group in self.groups)

    async def run(self) -> None:
        executor = concurrent.futures.ThreadPoolExecutor(len(self.groups), thread_name_prefix=f"envs-{self.name}")
        try:
            async with asyncio.TaskGroup() as tasks:
                for index, group in enumerate(self.groups):
                    tasks.create_task(self._run_group(index, group, executor))
        finally:
            # A step in flight finishes, and the envs close, off the loop: it serves the drain meanwhile.
            await asyncio.to_thread(self._close, executor)
        log.info("actor_done", actor=self.name, steps=self.steps)

    def _close(self, executor: concurrent.futures.Executor) -> None:
        executor.shutdown(wait=True, cancel_futures=True)
        for group in self.groups:
            group.close()

    def _finished(self) -> bool:
        return self.config.max_steps is not None and self.steps >= self.config.max_steps

    async def _run_group(self, index: int, group: EnvGroup, executor: concurrent.futures.Executor) -> None:
        """Streams of one group until done. Streams failed one after another without a step in between wait
        longer each time, with full jitter, as a gRPC actor's reconnects do."""
        wait = tenacity.wait_random_exponential(multiplier=self.config.backoff_initial_s, max=self.config.backoff_max_s)
        name, lost, slots = f"{self.name}/{index}", 0, np.zeros(0, np.int32)
        while not self._finished():
            progress = group.steps
            try:
                stream = self._open(name, group, slots)
                slots = stream.slots  # a reopened stream asks for them back: the learner's episodes go on
                try:
                    await self._act(stream, group, executor)
                finally:
                    stream.close()
            except Unanswered as exc:
                lost = 1 if group.steps > progress else lost + 1
                delay = wait(Attempt(lost))
                log.warning("stream_lost", actor=name, error=str(exc), retry_in_s=round(delay, 3))
                await asyncio.sleep(delay)
            except Exception:  # the env raised: this group is done, the others and the learner go on
                log.exception("env_group_failed", actor=name, steps=group.steps)
                return

    def _open(self, name: str, group: EnvGroup, previous: np.ndarray) -> LocalStream:
        try:
            return self._port.open_local(self.spec, group.run_ids, name, self.config.evaluation, previous)
        except RuntimeError as exc:  # no free slot: a gRPC actor's RESOURCE_EXHAUSTED, tried again with backoff
            raise Unanswered(f"{type(exc).__name__}: {exc}") from exc

    async def _act(self, stream: LocalStream, group: EnvGroup, executor: concurrent.futures.Executor) -> None:
        loop = asyncio.get_running_loop()
        while not self._finished():
            try:
                actions = await stream.act(group.rows(stream.slots, self.config.evaluation))
            except Exception as exc:  # the learner's InferenceError: what a gRPC stream gets as INTERNAL
                raise Unanswered(f"{type(exc).__name__}: {exc}") from exc
            await loop.run_in_executor(executor, group.step, actions)
