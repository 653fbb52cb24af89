"""The trainer's loop on one component's fakes: where the source hears back from a train step."""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import structlog.testing
from tests.waiting import until

from aioseed.server.training.trainer import Trainer, TrainingConfig


class OneUpdateAgent:
    def set_progress(self, frames: int) -> None:
        pass

    def train_step(self, batch, applied) -> dict:
        applied()
        return {"losses/total": 0.0, "priorities": np.ones(2, np.float32)}


class RecordingSource:
    """A replay's feedback: in the real one it takes the replay's lock, which a save holds for seconds."""

    def __init__(self) -> None:
        self.batches: asyncio.Queue = asyncio.Queue()
        self.updated_in: list[str] = []

    async def run(self) -> None:
        return

    async def next_batch(self) -> dict:
        return await self.batches.get()

    def update(self, batch: dict, metrics: dict) -> None:
        metrics.pop("priorities")
        self.updated_in.append(threading.current_thread().name)

    def metrics(self) -> dict:
        return {}


async def test_a_replays_priorities_are_written_back_in_the_train_thread_not_on_the_event_loop() -> None:
    source = RecordingSource()
    steps: list[dict] = []
    trainer = Trainer(TrainingConfig(), OneUpdateAgent(), source, lambda metrics, lag: steps.append(metrics))
    async with asyncio.TaskGroup() as group:
        tasks = [group.create_task(trainer.prefetch()), group.create_task(trainer.train())]
        await source.batches.put({"version": np.zeros((3, 2), np.int64)})
        await until(lambda: steps, "the train step")
        for task in tasks:
            task.cancel()
    assert source.updated_in and source.updated_in[0].startswith("train")
    assert "priorities" not in steps[0]  # popped before the step's metrics are reported


async def test_the_first_train_step_is_announced_and_timed_once() -> None:
    """Acting stops while the first step traces (and may compile) the update: the log says why, and how long."""
    source = RecordingSource()
    steps: list[dict] = []
    trainer = Trainer(TrainingConfig(), OneUpdateAgent(), source, lambda metrics, lag: steps.append(metrics))
    with structlog.testing.capture_logs() as logs:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(trainer.prefetch()), group.create_task(trainer.train())]
            for _ in range(3):
                await source.batches.put({"version": np.zeros((3, 2), np.int64)})
            await until(lambda: len(steps) == 3, "three train steps")
            for task in tasks:
                task.cancel()
    events = [entry["event"] for entry in logs if entry["event"].startswith("first_train_step")]
    assert events == ["first_train_step", "first_train_step_done"]
    done = next(entry for entry in logs if entry["event"] == "first_train_step_done")
    assert done["seconds"] >= 0 and done["version"] == 1
