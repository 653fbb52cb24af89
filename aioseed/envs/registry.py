"""Environments the actors step and the spec the learner serves: any gymnasium id (aioseed/ ids are
registered by this package), as a vector env with next-step autoreset."""

from __future__ import annotations

import gymnasium as gym

from aioseed.envs.atari import AtariConfig, is_atari, make_atari_vector_env
from aioseed.envs.football import FootballConfig, is_football, make_football_vector_env
from aioseed.spec import EnvSpec


def make_vector_env(
    env_id: str,
    num_envs: int,
    atari: AtariConfig = AtariConfig(),
    football: FootballConfig = FootballConfig(),
    **env_kwargs: object,
) -> gym.vector.VectorEnv:
    """``num_envs`` copies of ``env_id`` stepped together (``env_kwargs`` go to the env, e.g. max_episode_steps).

    ``ALE/...`` ids run ale-py's vector env with ``atari``; ``football:<scenario>``
    ids run gfootball engines with ``football``.

    Uses the env's own vectorized implementation when it registers one (e.g.
    CartPole's NumPy ``CartPoleVectorEnv``), otherwise a ``SyncVectorEnv``.
    Either way the autoreset mode is gymnasium's default, next-step: the step
    after an episode's final observation resets that env and ignores its action.
    """
    if is_atari(env_id):
        return make_atari_vector_env(env_id, num_envs, atari)
    if is_football(env_id):
        return make_football_vector_env(env_id, num_envs, football)
    spec = gym.spec(env_id)
    mode = "vector_entry_point" if spec.vector_entry_point is not None else "sync"
    kwargs = {} if mode == "vector_entry_point" else {"vector_kwargs": {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}}
    envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **kwargs, **env_kwargs)
    autoreset = envs.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
    if autoreset != gym.vector.AutoresetMode.NEXT_STEP:
        raise ValueError(f"{env_id}: aioseed needs next-step autoreset, the vector env uses {autoreset}")
    return envs


def vector_env_spec(env_id: str, envs: gym.vector.VectorEnv, atari: AtariConfig = AtariConfig()) -> EnvSpec:
    """The spec of one of ``envs`` (made by ``make_vector_env(env_id, ..., atari)``)."""
    frames_per_step = atari.frameskip if is_atari(env_id) else 1
    return EnvSpec.from_spaces(envs.single_observation_space, envs.single_action_space, frames_per_step)


def env_spec(env_id: str, atari: AtariConfig = AtariConfig(), football: FootballConfig = FootballConfig()) -> EnvSpec:
    """The spec actors running ``env_id`` will declare."""
    envs = make_vector_env(env_id, 1, atari, football)
    try:
        return vector_env_spec(env_id, envs, atari)
    finally:
        envs.close()
