"""aioseed/Catch-v0: bsuite's Catch as pixels, through gymnasium's registry and vector envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from aioseed.envs.registry import env_spec, make_vector_env
from aioseed.envs import CATCH_ID
from aioseed.envs.catch import LEFT, RIGHT, STAY, Catch


def positions(observation: np.ndarray, env: Catch) -> tuple[tuple[int, int], list[int]]:
    """(ball row, ball column) and the lit columns of the bottom row, read back from the pixels."""
    r, c = env._row_edges, env._column_edges
    lit = [[observation[0, r[i], c[j]] == 255 for j in range(env.columns)] for i in range(env.rows)]
    ball = next((i, j) for i in range(env.rows - 1) for j in range(env.columns) if lit[i][j])
    return ball, [j for j in range(env.columns) if lit[-1][j]]


def test_passes_gymnasiums_checker_and_draws_ball_and_paddle() -> None:
    env = gym.make(CATCH_ID).unwrapped
    check_env(env, skip_render_check=True)
    observation, _ = env.reset(seed=3)
    assert observation.shape == (1, 84, 84) and observation.dtype == np.uint8
    ball, paddle = positions(observation, env)
    assert ball[0] == 0 and paddle == [2]
    assert env.render().shape == (84, 84, 3)


@pytest.mark.parametrize("follow", [True, False], ids=["caught", "missed"])
def test_the_ball_falls_for_rows_minus_one_steps_then_pays_plus_or_minus_one(follow: bool) -> None:
    env = Catch()
    observation, _ = env.reset(seed=0)
    (_, column), _ = positions(observation, env)
    paddle, total = env.columns // 2, 0.0
    for step in range(1, env.rows):
        target = column if follow else (column + 2) % env.columns
        action = STAY if paddle == target else (LEFT if paddle > target else RIGHT)
        observation, reward, terminated, truncated, _ = env.step(np.int64(action))
        paddle = int(np.clip(paddle + action - 1, 0, env.columns - 1))
        total += reward
        assert not truncated
        assert terminated == (step == env.rows - 1)
        if not terminated:
            assert positions(observation, env)[0] == (step, column)
    assert total == (1.0 if follow else -1.0)


def test_the_spec_and_vector_env_aioseed_serves() -> None:
    spec = env_spec(CATCH_ID)
    assert (spec.observation_shape, spec.observation_dtype, spec.num_actions) == ((1, 84, 84), "uint8", 3)
    envs = make_vector_env(CATCH_ID, 4)
    observations, _ = envs.reset(seed=0)
    assert observations.shape == (4, 1, 84, 84)
    for _ in range(9):
        observations, rewards, terminated, _, _ = envs.step(np.ones(4, np.int64))
    assert terminated.all() and set(np.unique(rewards)) <= {-1.0, 1.0}
    envs.close()


def test_bad_sizes_and_actions_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot draw"):
        Catch(size=4)
    env = Catch()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="not in Discrete"):
        env.step(np.int64(3))
