"""Shared fixtures: a real learner serving on loopback inside the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import pathlib
from collections.abc import AsyncIterator, Callable

import pytest
import uvloop

from aioseed import log as logging_setup
from aioseed.server.config import LearnerConfig

logging_setup.configure("info")


@pytest.fixture(scope="session")
def event_loop_policy() -> uvloop.EventLoopPolicy:
    return uvloop.EventLoopPolicy()


def small_config(tmp_path: pathlib.Path | None, **overrides) -> LearnerConfig:
    """CartPole on 127.0.0.1 with a free port and small batches, for fast tests."""
    base = LearnerConfig(
        host="127.0.0.1",
        port=0,
        logdir=tmp_path,
        log_every_s=0.5,
        tensorboard=False,
        slot_grace_s=0.5,
        console_port=0,
    )
    return dataclasses.replace(base, **overrides)


LearnerFactory = Callable[..., contextlib.AbstractAsyncContextManager]


@pytest.fixture
def running_learner() -> LearnerFactory:
    """``async with running_learner(config) as learner:`` serves until the block ends."""
    from aioseed.app import build

    @contextlib.asynccontextmanager
    async def start(config: LearnerConfig) -> AsyncIterator:
        learner = build(config)
        await learner.start()
        task = asyncio.create_task(learner.run())
        try:
            yield learner
        finally:
            learner.request_stop()
            await asyncio.wait_for(task, 30)

    return start
