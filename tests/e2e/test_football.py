"""Google Research Football through learner and actor processes: the real engine, a few unrolls, a train step."""

from __future__ import annotations

import pytest

from tests.processes import train_through_processes

SCENARIO = "football:academy_empty_goal_close"


@pytest.mark.parametrize(
    "flags,wire",
    [
        (["--football.stacked"], "obs uint8[72,96,16], 19 actions"),
        (["--football.representation", "simple115v2", "--football.rewards", "scoring,checkpoints"], "obs float32[115], 19 actions"),
    ],
    ids=["stacked SMM + Football ResNet", "simple115v2 + MLP"],
)
async def test_football_trains_through_learner_and_actor_processes(tmp_path, flags, wire) -> None:
    await train_through_processes(
        ["--env", SCENARIO, "--logdir", str(tmp_path), "--log-every-s", "1", "--training.unroll-length", "8",
         "--training.batch-size", "2", *flags],
        ["--env", SCENARIO, "--num-envs", "2", "--envs-per-message", "2", *flags],
        wire,
        slots=2,
    )
