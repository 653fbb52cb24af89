"""Issue 58's target: a fourth algorithm touches only its own folder and one registry line. A toy A2C, registered
from this test's package (tests/algos/toy_a2c), trains CartPole through ``aioseed run``'s own code path."""

from __future__ import annotations

import dataclasses

from aioseed.commands.run import RunConfig, train_locally
from aioseed.server.config import StopConfig
from tests.conftest import small_config


async def test_an_algorithm_registered_from_outside_aioseed_trains_cartpole(tmp_path) -> None:
    from aioseed.algos.registry import algorithm
    from tests.algos import toy_a2c  # registers toy-a2c

    assert algorithm("toy-a2c") is toy_a2c.A2C
    learner = small_config(
        tmp_path, agent="toy-a2c", return_window=20, console={"enabled": False}, seed=1,
        training={"batch_size": 8, "unroll_length": 16}, stop=StopConfig(at_return=100.0, after_frames=400_000),
    )
    run = dataclasses.replace(RunConfig(), learner=learner, num_actors=1, envs_per_actor=16)
    summary = await train_locally(run)
    assert summary.stop_reason == "return", summary  # a random policy averages ~22
    assert summary.stop_mean_return >= 100.0 and summary.train_steps > 0
