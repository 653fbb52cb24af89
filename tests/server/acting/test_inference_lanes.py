"""Several inference lanes (one per inference device): batches run the policy at once, and each
env's state still follows its own rows."""

from __future__ import annotations

import asyncio
import threading

import numpy as np

from aioseed.server.acting.core_states import CoreStates
from aioseed.server.acting.env_table import EnvTable
from aioseed.server.acting.inference import InferenceLoop
from aioseed.server.acting.step import Acting
from aioseed.server.batching.batcher import Batcher, BatcherConfig
from aioseed.server.trajectories.unroll_store import UnrollStore
from aioseed.types import Rows, step_columns

COLUMNS = {"count": ((1,), np.float32)}


class MeetingPolicy:
    """Each batch waits inside the policy until ``lanes`` batches are there together: with fewer
    concurrent lanes the barrier breaks. The action is the env's step count (its state)."""

    def __init__(self, lanes: int) -> None:
        self.barrier = threading.Barrier(lanes, timeout=5.0)

    def infer(self, observations, state, slots, evaluation=None, rewards=None):
        self.barrier.wait()
        return {"action": state["count"][:, 0].astype(np.int32)}, {"count": state["count"] + 1}


def rows(slots: list[int]) -> Rows:
    n = len(slots)
    return Rows(
        slot=np.array(slots, np.int32),
        run_id=np.ones(n, np.uint64),
        reward=np.zeros(n, np.float32),
        flags=np.zeros(n, np.uint8),
        observation=np.zeros(n, np.float32),
        evaluation=np.zeros(n, bool),
    )


async def test_two_lanes_run_two_batches_at_once_and_keep_each_envs_state() -> None:
    columns = {**step_columns((), np.float32), "action": ((), np.int32), **COLUMNS}
    store = UnrollStore(4, columns, overlap=1, first_step_only=COLUMNS.keys())
    batcher = Batcher(BatcherConfig(max_batch_size=2, deadline_ms=50.0))
    answered: list[int] = []
    acting = Acting(
        policy=MeetingPolicy(lanes=2), envs=EnvTable(), store=store, version=lambda: 0, space=2**31 - 1, stacker=None,
        states=CoreStates(COLUMNS),
    )
    loop = InferenceLoop(batcher, acting, asyncio.Queue(), lambda batch, result: answered.append(batch.size), lanes=2)
    runner = asyncio.create_task(loop.run())
    try:
        for step in range(3):
            # Two full batches of different envs: both must be inside the policy together.
            first, second = loop.submit(rows([0, 1])), loop.submit(rows([2, 3]))
            results = await asyncio.wait_for(asyncio.gather(first, second), timeout=10)
            for result in results:
                assert result["action"].tolist() == [step, step]  # each env counts its own steps
                assert not result["invalid"].any()
    finally:
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert answered == [2] * 6


async def test_a_batch_of_several_messages_is_concatenated_in_the_inference_thread(monkeypatch) -> None:
    """An Atari batch of 256 rows is ~7 MB to copy: done on the event loop, it stalled every stream."""
    threads: list[threading.Thread] = []
    concatenate = np.concatenate

    def recording(*args, **kwargs):
        threads.append(threading.current_thread())
        return concatenate(*args, **kwargs)

    columns = {**step_columns((), np.float32), "action": ((), np.int32), **COLUMNS}
    store = UnrollStore(4, columns, overlap=1, first_step_only=COLUMNS.keys())
    batcher = Batcher(BatcherConfig(max_batch_size=4, deadline_ms=50.0))
    acting = Acting(
        policy=MeetingPolicy(lanes=1), envs=EnvTable(), store=store, version=lambda: 0, space=2**31 - 1, stacker=None,
        states=CoreStates(COLUMNS),
    )
    loop = InferenceLoop(batcher, acting, asyncio.Queue(), lambda batch, result: None)
    runner = asyncio.create_task(loop.run())
    try:
        monkeypatch.setattr(np, "concatenate", recording)
        results = await asyncio.wait_for(asyncio.gather(loop.submit(rows([0, 1])), loop.submit(rows([2, 3]))), timeout=10)
    finally:
        monkeypatch.undo()
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert [r["action"].tolist() for r in results] == [[0, 0], [0, 0]]
    assert threads and threading.main_thread() not in threads
