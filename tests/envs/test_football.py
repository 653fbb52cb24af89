"""gfootball through shimmy: spaces of each representation, and how episodes end (terminated vs truncated)."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.envs.football import FootballConfig, make_football_env, scenario_name, time_limit_reached
from aioseed.envs.registry import env_spec

EMPTY_GOAL = "football:academy_empty_goal_close"
IDLE, RIGHT, SHOT = 0, 5, 12  # gfootball's default action set


def test_ids_and_the_time_limit_rule() -> None:
    assert scenario_name(EMPTY_GOAL) == "academy_empty_goal_close"
    with pytest.raises(ValueError, match="not a football id"):
        scenario_name("football:")
    with pytest.raises(ValueError, match="unknown football scenario .nope.. The scenarios: .*academy_corner"):
        make_football_env("football:nope")  # gfootball alone would sys.exit(1)
    assert time_limit_reached(steps_left=0, score_reward=0)
    assert not time_limit_reached(steps_left=0, score_reward=1)  # a goal on the last step ends it as a goal
    assert not time_limit_reached(steps_left=12, score_reward=0)


@pytest.mark.parametrize(
    "config, shape, dtype",
    [
        (FootballConfig(), (72, 96, 4), "uint8"),
        (FootballConfig(stacked=True), (72, 96, 16), "uint8"),
        (FootballConfig(representation="simple115v2"), (115,), "float32"),
    ],
    ids=["SMM", "stacked SMM", "simple115v2"],
)
def test_each_representation_declares_and_returns_its_shape_and_dtype(config, shape, dtype) -> None:
    spec = env_spec(EMPTY_GOAL, football=config)
    assert (spec.observation_shape, spec.observation_dtype, spec.num_actions) == (shape, dtype, 19)
    env = make_football_env(EMPTY_GOAL, config)
    try:
        observation, _ = env.reset(seed=0)
        assert observation.shape == shape and observation.dtype == np.dtype(dtype)
        observation, *_ = env.step(IDLE)
        assert observation.shape == shape and observation.dtype == np.dtype(dtype)
    finally:
        env.close()


def play(env, actions) -> tuple[int, float, bool, bool]:
    """Steps ``actions`` (repeating the last) until the episode ends: (steps, return, terminated, truncated)."""
    env.reset(seed=0)
    total, steps = 0.0, 0
    while True:
        _, reward, terminated, truncated, _ = env.step(actions[min(steps, len(actions) - 1)])
        total, steps = total + reward, steps + 1
        if terminated or truncated:
            return steps, total, terminated, truncated
        assert steps < 10_000


def test_the_clock_ending_an_episode_is_a_truncation_and_goals_or_out_of_play_are_terminations() -> None:
    match = make_football_env("football:1_vs_1_easy")  # episodes end only by the clock (500 steps)
    try:
        steps, total, terminated, truncated = play(match, [IDLE])
        assert (steps, terminated, truncated) == (501, False, True)
    finally:
        match.close()
    academy = make_football_env(EMPTY_GOAL)  # ends on a goal, out of play or lost possession
    try:
        steps, total, terminated, truncated = play(academy, [RIGHT] * 8 + [SHOT, IDLE])  # run in, shoot, wait
        assert (total, terminated, truncated) == (1.0, True, False), steps
        steps, total, terminated, truncated = play(academy, [IDLE])  # the ball ends up out of play
        assert (total, terminated, truncated) == (0.0, True, False) and steps < 400, steps
    finally:
        academy.close()


@pytest.mark.parametrize("representation", ["extracted", "simple115v2"])
@pytest.mark.parametrize("stacked", [False, True], ids=["single", "stacked"])
@pytest.mark.parametrize("players", [(1, 0), (2, 1)], ids=["1 player", "2+1 players"])
def test_the_spec_a_learner_serves_without_an_engine_is_the_engines(representation, stacked, players) -> None:
    from aioseed.envs.football import football_spec
    from aioseed.envs.registry import make_vector_env, vector_env_spec

    config = FootballConfig(representation=representation, stacked=stacked, left_players=players[0], right_players=players[1])
    envs = make_vector_env("football:academy_3_vs_1_with_keeper", 1, football=config)
    try:
        assert football_spec(config) == vector_env_spec("football:academy_3_vs_1_with_keeper", envs)
    finally:
        envs.close()
