"""Atari through ale-py's C++ ``AtariVectorEnv``: preprocessing in native threads, ROMs from the wheel.

Gymnasium ids ``ALE/<Game>-v5`` map to the vector env's game name (``ALE/MsPacman-v5`` ->
``ms_pacman``). Observations are ``uint8[stack, 84, 84]`` grayscale frames; each step
repeats the action ``frameskip`` times and max-pools the last two frames. As in v5,
actions are sticky with probability 0.25. Autoreset is next-step, as aioseed's actors need.
"""

from __future__ import annotations

import dataclasses
import functools
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
    """A lost life ends the training episode (terminated: no bootstrap; the frame stack restarts) while the
    game plays on, FIRE (NOOP in games without it) running in place of the next action; returns still count whole
    games. CleanRL's EpisodicLifeEnv with FireResetEnv (``aioseed.envs.life_loss``)."""
    fire_reset: bool = True
    """Press FIRE after a reset in games that need it."""
    max_episode_frames: int = 108_000
    """Emulator frames after which an episode is truncated (30 minutes of play)."""
    num_threads: int = 0
    """Native worker threads (0: one per env, capped by the machine)."""


def game_name(env_id: str) -> str:
    """``ALE/MsPacman-v5`` -> ``ms_pacman``: the ROM ale-py registers the id with (``TicTacToe3D`` is
    ``tic_tac_toe_3d``), else the name in snake case."""
    match = re.fullmatch(r"ALE/(\w+?)-v\d+", env_id)
    if match is None:
        raise ValueError(f"not an ALE id: {env_id!r} (expected e.g. ALE/Pong-v5)")
    import ale_py

    gym.register_envs(ale_py)
    registered = gym.registry.get(env_id)
    if registered is not None and "game" in registered.kwargs:
        return registered.kwargs["game"]
    return re.sub(r"(?<!^)(?=[A-Z])", "_", match.group(1)).lower()


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


def make_atari_vector_env(env_id: str, num_envs: int, config: AtariConfig = AtariConfig()) -> gym.vector.VectorEnv:
    from ale_py.vector_env import AtariVectorEnv

    envs = AtariVectorEnv(
        game=game_name(env_id),
        num_envs=num_envs,
        num_threads=min(config.num_threads or num_envs, num_envs),
        frameskip=config.frameskip,
        stack_num=config.stack,
        noop_max=config.noop_max,
        repeat_action_probability=config.sticky_action_probability,
        episodic_life=False,  # ale-py's resets the whole game at a lost life: with_life_loss does CleanRL's instead
        use_fire_reset=config.fire_reset,
        max_num_frames_per_episode=config.max_episode_frames,
        reward_clipping=False,  # the learner clips (ImpalaConfig.reward_clipping), so returns stay true scores
        autoreset_mode="NextStep",
    )
    return with_life_loss(envs, env_id, config)


@functools.cache
def relaunch_action(env_id: str, config: AtariConfig) -> int:
    """The action that follows a lost life under ``episodic_life``: FIRE (index 1) in games whose second minimal
    action is FIRE, as ale-py's ``use_fire_reset`` reads it, when ``fire_reset`` is on; NOOP (0) otherwise. Read
    once per game and settings, not once per vector env."""
    import ale_py
    from ale_py import roms

    ale = ale_py.ALEInterface()
    ale.setLoggerMode(ale_py.LoggerMode.Error)
    ale.loadROM(roms.get_rom_path(game_name(env_id)))
    actions = ale.getMinimalActionSet()
    return int(config.fire_reset and len(actions) > 1 and actions[1] == ale_py.Action.FIRE)


def with_life_loss(envs: gym.vector.VectorEnv, env_id: str, config: AtariConfig) -> gym.vector.VectorEnv:
    """``envs`` (an Atari game's, reporting ``lives``) with ``episodic_life`` applied when it is on."""
    if not config.episodic_life:
        return envs
    from aioseed.envs.life_loss import LifeLoss

    return LifeLoss(envs, relaunch_action(env_id, config), config.stack)
