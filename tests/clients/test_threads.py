"""Sebulba's threaded actor on its own, against a fake in-process port: its failures stay its own."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.clients.actor import ActorConfig
from aioseed.clients.threads import ThreadedActor
from aioseed.server.batching.batcher import InferenceError
from aioseed.spec import EnvSpec
from aioseed.types import Rows


class FakeStream:
    def __init__(self, port: FakePort, slots: np.ndarray) -> None:
        self.port, self.slots, self.closed = port, slots, False

    async def act(self, rows: Rows) -> np.ndarray:
        self.port.calls += 1
        if self.port.calls in self.port.fail_at:
            raise InferenceError("the policy's outputs are non-finite")
        return np.zeros(len(rows["slot"]), np.int64)

    def close(self) -> None:
        self.closed = True


class FakePort:
    """Answers every row with action 0, and fails the calls numbered in ``fail_at``."""

    def __init__(self, fail_at: tuple[int, ...] = ()) -> None:
        self.fail_at, self.calls, self.streams, self.asked = fail_at, 0, [], []

    def open_local(self, spec: EnvSpec, run_ids: np.ndarray, actor: str, evaluation: bool = False, previous=()) -> FakeStream:
        self.asked.append([int(s) for s in previous])
        slots = np.asarray(previous, np.int32) if len(previous) else np.arange(len(run_ids), dtype=np.int32) + 10 * len(self.streams)
        stream = FakeStream(self, slots)
        self.streams.append(stream)
        return stream


CONFIG = ActorConfig(num_envs=2, envs_per_message=1, seed=0, max_steps=60, backoff_initial_s=0.001, backoff_max_s=0.01)


async def test_a_failed_inference_reopens_the_groups_stream_and_acting_goes_on() -> None:
    port = FakePort(fail_at=(5, 6))
    actor = ThreadedActor(CONFIG, port)
    await actor.run()  # before: the InferenceError ended the actor's task group, and with it the learner's
    assert actor.steps >= 60
    assert len(port.streams) == 2 + 2  # each failure closed its stream and opened a new one
    assert all(stream.closed for stream in port.streams)
    # ... on the slots it held, so that the learner's episode and unroll of each env go on
    assert sum(1 for asked in port.asked if asked) == 2 and {int(s.slots[0]) for s in port.streams} == {0, 10}


async def test_an_env_that_raises_stops_its_group_only(monkeypatch: pytest.MonkeyPatch) -> None:
    port = FakePort()
    actor = ThreadedActor(CONFIG, port)
    broken = actor.groups[1]

    def crash(actions: np.ndarray) -> None:
        raise RuntimeError("the game engine crashed")

    monkeypatch.setattr(broken, "step", crash)
    await actor.run()  # returns: the other group steps on to max_steps
    assert broken.steps == 0 and actor.groups[0].steps >= 60
    assert all(stream.closed for stream in port.streams)
