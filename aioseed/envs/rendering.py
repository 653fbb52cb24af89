"""Envs whose frames can be recorded: ``envs.envs[i].render()`` gives env i's full-colour frame, while
the observations are the ones the policy trained on."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from aioseed.envs.atari import AtariConfig, is_atari
from aioseed.envs.football import is_football
from aioseed.envs.registry import registered_id


def rendering_vector_env(
    env_id: str, num_envs: int, atari: AtariConfig = AtariConfig(), kwargs: Mapping[str, Any] | None = None
) -> gym.vector.SyncVectorEnv:
    """``num_envs`` copies of ``env_id`` in a ``SyncVectorEnv`` (next-step autoreset): gymnasium ids made
    with ``render_mode="rgb_array"``; ALE ids as ``AtariFrames`` (the 210 x 160 colour screen, the same
    84 x 84 stacks as ale-py's vector env)."""
    autoreset = gym.vector.AutoresetMode.NEXT_STEP
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # rgb_array frames need no display (pygame probes one)
    if is_football(env_id):
        raise ValueError(f"{env_id}: recording needs a gymnasium or ALE id (gfootball renders through OpenGL)")
    if is_atari(env_id):
        from aioseed.envs.atari_frames import AtariFrames

        return gym.vector.SyncVectorEnv([lambda: AtariFrames(env_id, atari)] * num_envs, autoreset_mode=autoreset)
    name, extra = registered_id(env_id), dict(kwargs or {})
    return gym.vector.SyncVectorEnv([lambda: gym.make(name, render_mode="rgb_array", **extra)] * num_envs, autoreset_mode=autoreset)
