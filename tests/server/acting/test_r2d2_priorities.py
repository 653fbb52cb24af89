"""Over loopback, R2D2 as SEED runs it: each unroll the learner completes enters the replay at the priority its
agent computes from the Q values inference acted with, stored with the unroll's steps."""

from __future__ import annotations

import grpc
import numpy as np
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import Stream, hello, steps

R2D2 = {"lstm_size": 8, "hidden_sizes": (8,), "dueling_hidden": 8, "burn_in": 1, "n_steps": 2, "replay_capacity": 64, "min_replay_size": 64}
UNROLL = 3  # unrolls of burn_in + T + 1 = 5 rows, overlapping by burn_in + 1 = 2: rows 0-4, 3-7, 6-10


async def test_new_unrolls_enter_the_replay_at_their_inference_priorities(running_learner, tmp_path) -> None:
    config = small_config(tmp_path, agent="r2d2", r2d2=R2D2, training={"unroll_length": UNROLL, "batch_size": 2})
    rng = np.random.default_rng(0)
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        replay = learner._stages.source.replay
        stream = Stream(channel)
        slots = await stream.handshake(hello(1))
        for _ in range(11):  # below min_replay_size: nothing trains, so the priorities are the initial ones
            observations = rng.normal(size=(1, 4)).astype(np.float32)
            await stream.step(steps(slots, observations=observations, rewards=rng.normal(size=1) * 5.0))
        await until(lambda: replay.inserted == 3, "three unrolls")
        stored = [{name: column[i] for name, column in replay._columns.items()} for i in range(3)]
        expected = learner.agent.initial_priorities(stored)
    assert all(np.isfinite(unroll["q_taken"]).all() and unroll["prev_action"].sum() in (0.0, 1.0) for unroll in stored)
    assert stored[1]["prev_action"].sum() == 1.0  # mid-episode: the action taken before its first row
    priorities = replay._tree.get(np.arange(3)) ** (1.0 / replay.priority_exponent)
    np.testing.assert_allclose(priorities, expected, rtol=1e-5)
    assert len(set(np.round(priorities, 6))) == 3  # each its own, not the largest seen for all
