"""Google Research Football through learner and actor processes: the real engine, a few unrolls, a train step."""

from __future__ import annotations

import pytest
from tests.processes import train_through_processes

SCENARIO = "football:academy_empty_goal_close"


STACKED = ["--football.stacked"]
SIMPLE = ["--football.representation", "simple115v2", "--football.rewards", "scoring,checkpoints"]


@pytest.mark.parametrize(
    "learner_flags,actor_flags,wire",
    [
        (STACKED, STACKED, "obs uint8[72,96,16], 19 actions"),
        (SIMPLE, SIMPLE, "obs float32[115], 19 actions"),
        ([], ["--env-backend", "envpool"], "obs uint8[72,96,4], 19 actions"),
    ],
    ids=["stacked SMM + Football ResNet", "simple115v2 + MLP", "EnvPool's engine, SMM"],
)
async def test_football_trains_through_learner_and_actor_processes(tmp_path, learner_flags, actor_flags, wire) -> None:
    await train_through_processes(
        ["--env", SCENARIO, "--logdir", str(tmp_path), "--log-every-s", "1", "--training.unroll-length", "8",
         "--training.batch-size", "2", *learner_flags],
        ["--env", SCENARIO, "--num-envs", "2", "--envs-per-message", "2", *actor_flags],
        wire,
        slots=2,
    )
