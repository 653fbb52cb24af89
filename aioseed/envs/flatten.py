"""Structured observations served as one flat Box (Dict, Tuple, discrete spaces), whichever backend steps the env."""

from __future__ import annotations

import gymnasium as gym

FLATTENED = (gym.spaces.Dict, gym.spaces.Tuple, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
"""Observation spaces served flattened into one Box by ``gymnasium.spaces.flatten`` (docs/environments.md has
the mapping): a Dict's spaces in its key order, a Tuple's in order, Discrete(n) as a one-hot of n, MultiDiscrete
as concatenated one-hots, MultiBinary as its 0/1 bits, a Box raveled."""


def flattened(envs: gym.vector.VectorEnv) -> gym.vector.VectorEnv:
    """``envs`` with their observations flattened into one Box where their space is one of ``FLATTENED``."""
    if isinstance(envs.single_observation_space, FLATTENED):
        return gym.wrappers.vector.FlattenObservation(envs)
    return envs
