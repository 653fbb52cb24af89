"""The actor's side of the done convention, on real gymnasium vector envs."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.clients.env_group import EnvGroup
from aioseed.envs.registry import make_vector_env
from aioseed.spec import EnvSpec
from aioseed.types import FINAL, TERMINATED, TRUNCATED

CARTPOLE = EnvSpec(observation_shape=(4,), observation_dtype="float32", action_space=2)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Acrobot-v1"])  # NumPy-vectorized and SyncVectorEnv
def test_truncation_sends_the_final_observation_then_the_reset_row(env_id: str) -> None:
    envs = make_vector_env(env_id, 2, kwargs={"max_episode_steps": 3})
    spec = EnvSpec.from_spaces(envs.single_observation_space, envs.single_action_space)
    group = EnvGroup(envs, spec, np.array([1, 2], np.uint64), seed=0)
    rows = []
    for _ in range(4):
        group.step(np.zeros(2, np.int32))
        rows.append((group.flags.copy(), group.rewards.copy(), group.observations.copy()))
    flags = [r[0] for r in rows]
    assert [f.tolist() for f in flags[:2]] == [[0, 0], [0, 0]]
    # The 3rd step hits the time limit (CartPole pushed left for 3 steps does not fall).
    if env_id == "CartPole-v1":
        assert flags[2].tolist() == [TRUNCATED | FINAL] * 2
    else:
        assert np.all(flags[2] & FINAL)
    # The next step resets: reward 0, no flags, a fresh observation; the ignored action is not counted.
    assert flags[3].tolist() == [0, 0]
    assert rows[3][1].tolist() == [0.0, 0.0]
    assert not np.array_equal(rows[3][2], rows[2][2])
    assert group.steps == 2 * 3


def test_termination_is_flagged_final_with_the_terminal_observation() -> None:
    group = EnvGroup(make_vector_env("CartPole-v1", 1), CARTPOLE, np.array([7], np.uint64), seed=3)
    for _ in range(200):  # always pushing right makes the pole fall within a few dozen steps
        group.step(np.ones(1, np.int32))
        if group.flags[0]:
            break
    assert group.flags[0] == TERMINATED | FINAL
    assert group.rewards[0] == 1.0
    x, _, theta, _ = group.observations[0]
    assert abs(theta) > 0.2095 or abs(x) > 2.4  # the terminal state itself, not a reset
    message = group.message(np.array([5], np.int32))
    assert message.steps.flags == bytes([TERMINATED | FINAL])
    assert np.frombuffer(message.steps.observations, "<f4").tolist() == group.observations[0].tolist()
