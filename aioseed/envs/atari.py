"""Atari through ale-py's C++ ``AtariVectorEnv``: preprocessing in native threads, ROMs from the wheel.

Gymnasium ids ``ALE/<Game>-v5`` map to the vector env's game name (``ALE/MsPacman-v5`` ->
``ms_pacman``). Observations are ``uint8[stack, 84, 84]`` grayscale frames; each step
repeats the action ``frameskip`` times and max-pools the last two frames. As in v5,
actions are sticky with probability 0.25. Autoreset is next-step, as aioseed's actors need.
"""

from __future__ import annotations

import dataclasses
import re

import gymnasium as gym


@dataclasses.dataclass(frozen=True)
class AtariConfig:
    """Atari preprocessing (Machado et al. 2018 / v5 defaults, DQN-style frames)."""

    frameskip: int = 4
    """Emulator frames per env step; the observation max-pools the last two."""
    stack: int = 4
    """Frames stacked into one observation."""
    noop_max: int = 30
    """Up to this many no-op actions at the start of each episode."""
    sticky_action_probability: float = 0.25
    """Probability that the emulator repeats the previous action (v5)."""
    episodic_life: bool = False
    """End an episode (as terminated) at every life lost."""
    fire_reset: bool = True
    """Press FIRE after a reset in games that need it."""
    max_episode_frames: int = 108_000
    """Emulator frames after which an episode is truncated (30 minutes of play)."""
    num_threads: int = 0
    """Native worker threads (0: one per env, capped by the machine)."""


def game_name(env_id: str) -> str:
    """``ALE/MsPacman-v5`` -> ``ms_pacman``."""
    match = re.fullmatch(r"ALE/(\w+?)-v\d+", env_id)
    if match is None:
        raise ValueError(f"not an ALE id: {env_id!r} (expected e.g. ALE/Pong-v5)")
    return re.sub(r"(?<!^)(?=[A-Z])", "_", match.group(1)).lower()


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


def make_atari_vector_env(env_id: str, num_envs: int, config: AtariConfig = AtariConfig()) -> gym.vector.VectorEnv:
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv(
        game=game_name(env_id),
        num_envs=num_envs,
        num_threads=min(config.num_threads or num_envs, num_envs),
        frameskip=config.frameskip,
        stack_num=config.stack,
        noop_max=config.noop_max,
        repeat_action_probability=config.sticky_action_probability,
        episodic_life=config.episodic_life,
        use_fire_reset=config.fire_reset,
        max_num_frames_per_episode=config.max_episode_frames,
        reward_clipping=False,  # the learner clips (ImpalaConfig.reward_clipping), so returns stay true scores
        autoreset_mode="NextStep",
    )
