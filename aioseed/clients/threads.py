"""Sebulba's actors (Podracer, Hessel et al. 2021): env groups stepped in threads of the learner's own
process, their rows handed to its batcher as arrays. No serialization, no sockets; the batcher,
inference, unroll store and trainer are the ones the gRPC streams feed.

Each group of ``envs_per_message`` envs has its own thread, so env stepping (NumPy's vector CartPole,
ale-py's C++ vector env: both release the GIL for their heavy parts) runs beside inference and training.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from typing import Protocol

import numpy as np
import structlog

from aioseed.clients.actor import ActorConfig
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

    def open_local(self, spec: EnvSpec, run_ids: np.ndarray, actor: str, evaluation: bool = False) -> LocalStream: ...


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
            executor.shutdown(wait=True, cancel_futures=True)
            for group in self.groups:
                group.close()
        log.info("actor_done", actor=self.name, steps=self.steps)

    async def _run_group(self, index: int, group: EnvGroup, executor: concurrent.futures.Executor) -> None:
        loop = asyncio.get_running_loop()
        stream = self._port.open_local(self.spec, group.run_ids, f"{self.name}/{index}", self.config.evaluation)
        try:
            while self.config.max_steps is None or self.steps < self.config.max_steps:
                actions = await stream.act(group.rows(stream.slots, self.config.evaluation))
                await loop.run_in_executor(executor, group.step, actions)
        finally:
            stream.close()
