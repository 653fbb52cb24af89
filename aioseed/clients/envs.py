"""Environments the actors step: any gymnasium id."""

from __future__ import annotations

import gymnasium as gym

from aioseed.spec import EnvSpec


def make_env(env_id: str, seed: int | None = None) -> gym.Env:
    """Builds a gymnasium env by id (with its registered time limit)."""
    env = gym.make(env_id, disable_env_checker=True)
    if seed is not None:
        env.reset(seed=seed)
        env.action_space.seed(seed)
    return env


def env_spec(env_id: str) -> EnvSpec:
    """The spec actors running ``env_id`` will declare."""
    env = make_env(env_id)
    try:
        return EnvSpec.from_spaces(env.observation_space, env.action_space)
    finally:
        env.close()
