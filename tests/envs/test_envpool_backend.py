"""--env-backend envpool: EnvPool's task for each id, aioseed's Atari settings carried over, the same
spec as the default backend, and next-step autoreset (the done convention)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from aioseed.envs.atari import AtariConfig, make_atari_vector_env
from aioseed.envs.envpool_backend import envpool_settings, envpool_task, make_envpool_vector_env
from aioseed.envs.football import FootballConfig
from aioseed.envs.registry import make_vector_env, vector_env_spec


def test_ids_map_to_envpool_tasks_and_unknown_ones_are_refused() -> None:
    assert envpool_task("ALE/Pong-v5") == "Pong-v5"
    assert envpool_task("football:academy_3_vs_1_with_keeper") == "gfootball/academy_3_vs_1_with_keeper-v1"
    assert envpool_task("Hopper-v5") == "Hopper-v5"
    with pytest.raises(ValueError, match="--env-backend envpool has no 'NoSuchEnv-v0'"):
        envpool_task("NoSuchEnv-v0")


def test_the_atari_settings_carry_over_and_other_football_settings_are_refused() -> None:
    settings = envpool_settings("ALE/Pong-v5", AtariConfig(sticky_action_probability=0.0, noop_max=7, max_episode_frames=4000), FootballConfig())
    assert (settings["repeat_action_probability"], settings["noop_max"], settings["max_episode_steps"]) == (0.0, 7, 1000)
    assert settings["reward_clip"] is False and settings["stack_num"] == 4 and settings["frame_skip"] == 4
    with pytest.raises(ValueError, match="Super Mini Map with scoring rewards only"):
        envpool_settings("football:academy_empty_goal_close", AtariConfig(), FootballConfig(representation="simple115v2"))


@pytest.mark.parametrize("env_id", ["ALE/Pong-v5", "Hopper-v5", "CartPole-v1", "FrozenLake-v1"])  # FrozenLake: Discrete, flattened
def test_envpool_serves_the_default_backends_spec(env_id: str) -> None:
    envpool, default = make_vector_env(env_id, 2, backend="envpool"), make_vector_env(env_id, 1)
    try:
        assert vector_env_spec(env_id, envpool) == vector_env_spec(env_id, default)
        observations, _ = envpool.reset(seed=3)
        assert observations.shape == (2, *vector_env_spec(env_id, envpool).observation_shape)
    finally:
        envpool.close(), default.close()


def test_no_noop_starts_play_without_crashing_the_pool() -> None:
    """EnvPool's noop_max counts from 1 (0 crashed its threads, as under --protocol machado): no no-ops is 1."""
    assert envpool_settings("ALE/Pong-v5", AtariConfig(noop_max=0), FootballConfig())["noop_max"] == 1
    envs = make_vector_env("ALE/Pong-v5", 2, AtariConfig(noop_max=0), backend="envpool")
    try:
        observations, _ = envs.reset(seed=0)
        observations, *_ = envs.step(np.zeros(2, np.int64))
        assert observations.shape == (2, 4, 84, 84)
    finally:
        envs.close()


def test_the_step_after_an_episode_ends_starts_the_next_with_reward_0() -> None:
    envs = make_vector_env("CartPole-v1", 2, backend="envpool")
    try:
        envs.reset(seed=0)
        for _ in range(500):
            _, _, terminated, truncated, _ = envs.step(np.zeros(2, np.int64))  # always left: ends in ~10 steps
            if (terminated | truncated).any():
                break
        ended = terminated | truncated
        observations, rewards, terminated, truncated, _ = envs.step(np.zeros(2, np.int64))
        assert (rewards[ended] == 0).all() and not (terminated | truncated)[ended].any()
        assert (np.abs(observations[ended]) <= 0.05).all()  # a fresh CartPole state
    finally:
        envs.close()


def test_a_new_episodes_stack_starts_with_zeros_as_ale_pys_does() -> None:
    """EnvPool fills a new stack with its first frame; ale-py (and eval, and the learner's stacker) with zeros:
    the frames each backend's policy trained on must be the same. A cap of 10 steps ends the first episode."""
    config = AtariConfig(noop_max=0, sticky_action_probability=0.0, max_episode_frames=40)

    def filled(make: Callable) -> list[list[bool]]:
        envs = make("ALE/Pong-v5", 1, config)
        try:
            observations, _ = envs.reset(seed=1)
            seen = [observations]
            for _ in range(13):
                seen.append(envs.step(np.zeros(1, np.int32))[0])
            return [[bool(o[0, frame].any()) for frame in range(4)] for o in seen]
        finally:
            envs.close()

    envpool = filled(make_envpool_vector_env)
    assert envpool == filled(make_atari_vector_env)
    fresh = [[False, False, False, True], [False, False, True, True], [False, True, True, True], [True] * 4]
    assert envpool[:4] == fresh and envpool[11:] == fresh[:3]  # the reset, then the row after the truncation


def test_a_seed_makes_the_same_episodes_and_another_seed_others() -> None:
    """Sticky actions (0.25) and no-op starts draw from the seed: after 200 steps of the same actions the
    screens match for the same seed and differ for another."""

    def screens(seed: int) -> np.ndarray:
        envs = make_vector_env("ALE/Pong-v5", 2, AtariConfig(), backend="envpool")
        try:
            envs.reset(seed=seed)
            for t in range(200):
                observations, *_ = envs.step(np.full(2, 2 + t % 2))
            return observations
        finally:
            envs.close()

    assert np.array_equal(screens(11), screens(11)) and not np.array_equal(screens(11), screens(12))
