"""Several controlled players of one gfootball game as rows of a vector env, against the real engine."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.envs.football import FootballConfig
from aioseed.envs.registry import env_spec, make_vector_env

EMPTY_GOAL = "football:academy_empty_goal_close"  # left: keeper and a forward; right: one player
IDLE, RIGHT, SHOT = 0, 5, 12


def test_each_controlled_player_is_a_row_and_the_spec_says_how_many() -> None:
    config = FootballConfig(representation="simple115v2", left_players=3, right_players=1)
    spec = env_spec("football:academy_3_vs_1_with_keeper", football=config)
    assert (spec.observation_shape, spec.players, spec.rows_per_env) == ((115,), (3, 1), 4)
    assert "3 left + 1 right players/env" in spec.describe()
    assert spec.right_side(8).tolist() == [False, False, False, True] * 2
    assert env_spec(EMPTY_GOAL).players == (1, 0)  # one controlled player: one row per env, as before
    envs = make_vector_env("football:academy_3_vs_1_with_keeper", 2, football=config)
    try:
        observations, _ = envs.reset()
        assert envs.num_envs == 8 and observations.shape == (8, 115)
        # Each player sees the pitch from its own place: no two left players' observations are the same.
        assert len({observations[i].tobytes() for i in range(3)}) == 3
    finally:
        envs.close()


def test_a_goal_ends_the_game_for_all_its_players_and_rewards_each_side_with_its_sign() -> None:
    envs = make_vector_env(EMPTY_GOAL, 2, football=FootballConfig(left_players=1, right_players=1))
    try:
        envs.reset()
        script = [RIGHT] * 8 + [SHOT] + [IDLE] * 100
        for step, action in enumerate(script):
            # Game 0's forward runs in and shoots; game 1's stands still.
            _, rewards, terminated, truncated, _ = envs.step(np.array([action, IDLE, IDLE, IDLE]))
            if terminated[:2].any():
                break
        else:
            pytest.fail("no goal")
        assert rewards[:2].tolist() == [1.0, -1.0]  # the right side's reward is the left's, negated
        assert terminated[:2].tolist() == [True, True] and not truncated.any()
        assert not terminated[2:].any(), "the other game plays on"
        _, rewards, terminated, _, _ = envs.step(np.array([SHOT] * 4))  # next-step autoreset: game 0 restarts
        assert rewards[:2].tolist() == [0.0, 0.0] and not terminated.any()
    finally:
        envs.close()


def test_more_players_than_a_side_has_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="cannot control 4 left and 0 right players: the scenario's teams are smaller"):
        make_vector_env(EMPTY_GOAL, 1, football=FootballConfig(left_players=4))
    with pytest.raises(ValueError, match="left_players >= 1"):
        FootballConfig(left_players=0)
