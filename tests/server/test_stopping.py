"""The learner's stop conditions on time: of serving, or of training (from the first frames, start-up left out)."""

from __future__ import annotations

import asyncio
import time

import pytest

from aioseed.server.config import StopConfig
from aioseed.server.reporting.stats import Stats
from aioseed.server.stopping import TICK_S, Stopping


async def test_the_training_timer_counts_from_the_first_frames_not_from_serving() -> None:
    stats = Stats()
    stopping = Stopping(stats, after_training_seconds=0.2)
    async with asyncio.TaskGroup() as group:
        group.create_task(stopping.timer())
        await asyncio.sleep(0.5)  # serving with no actor yet: start-up, which the hold leaves out
        assert not stopping.requested
        stats.frames, began = 8, time.monotonic()
        await asyncio.wait_for(stopping.wait(), 5)
    assert stopping.reason == "time" and time.monotonic() - began >= 0.2 - TICK_S and stopping.frames == 8


async def test_serving_time_still_stops_first_when_it_comes_first() -> None:
    stats = Stats()
    stats.frames = 1
    stopping = Stopping(stats, after_seconds=0.1, after_training_seconds=60)
    began = time.monotonic()
    await asyncio.wait_for(stopping.timer(), 5)
    assert stopping.reason == "time" and 0.1 <= time.monotonic() - began < 30


def test_a_training_time_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="after_training_seconds must be positive, got 0"):
        StopConfig(after_training_seconds=0)


async def test_a_resumed_runs_training_time_counts_from_this_sessions_first_frames() -> None:
    stats = Stats()
    stats.frames = 5_000  # restored from its checkpoint before the timer starts
    stopping = Stopping(stats, after_training_seconds=0.1)
    async with asyncio.TaskGroup() as group:
        group.create_task(stopping.timer())
        await asyncio.sleep(0.3)
        assert not stopping.requested  # no frame of this session yet
        stats.frames += 8
        await asyncio.wait_for(stopping.wait(), 5)
    assert stopping.frames == 5_008
