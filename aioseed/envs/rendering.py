"""Envs whose frames can be recorded: ``envs.envs[i].render()`` gives env i's full-colour frame, while
the observations are the ones the policy trained on."""

from __future__ import annotations

import functools
import multiprocessing
import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from aioseed.envs.atari import AtariConfig, is_atari, with_life_loss
from aioseed.envs.flatten import flattened
from aioseed.envs.football import is_football
from aioseed.envs.registry import registered_id
from aioseed.errors import InvalidInput


def rendering_vector_env(
    env_id: str,
    num_envs: int,
    atari: AtariConfig = AtariConfig(),
    kwargs: Mapping[str, Any] | None = None,
    in_subprocess: bool = False,
) -> gym.vector.VectorEnv:
    """``num_envs`` copies of ``env_id`` in a ``SyncVectorEnv`` (next-step autoreset): gymnasium ids made
    with ``render_mode="rgb_array"``; ALE ids as ``AtariFrames`` (the 210 x 160 colour screen, the same
    84 x 84 stacks as ale-py's vector env); structured observations flattened as ``make_vector_env`` does.
    Read frames with ``first_frame``.

    ``in_subprocess``: the envs step and render in a fresh process (an ``AsyncVectorEnv``), for processes
    that have loaded TensorFlow: OSMesa's renderer crashes beside TensorFlow's own LLVM in one process."""
    autoreset = gym.vector.AutoresetMode.NEXT_STEP
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # rgb_array frames need no display (pygame probes one)
    if is_football(env_id):
        raise InvalidInput(f"{env_id}: recording needs a gymnasium or ALE id (gfootball renders through OpenGL)")
    if is_atari(env_id):
        from aioseed.envs.atari_frames import AtariFrames

        make = functools.partial(AtariFrames, env_id, atari)
    else:
        registered_id(env_id)  # an unknown id is refused here, in the caller's process
        make = functools.partial(_rendering_env, env_id, dict(kwargs or {}))
    if in_subprocess:
        envs: gym.vector.VectorEnv = gym.vector.AsyncVectorEnv([make] * num_envs, context="spawn", autoreset_mode=autoreset)
    else:
        headless_mujoco()
        envs = gym.vector.SyncVectorEnv([make] * num_envs, autoreset_mode=autoreset)
    return with_life_loss(envs, env_id, atari) if is_atari(env_id) else flattened(envs)


def headless_mujoco() -> None:
    """MuJoCo renders offscreen in software through OSMesa (Debian's libosmesa6, which ``make setup`` installs):
    no display and no GPU needed; MUJOCO_GL=egl renders on a GPU instead. Only in processes without TensorFlow:
    OSMesa loaded beside it corrupts the heap (the process aborts at exit)."""
    if "MUJOCO_GL" not in os.environ:
        os.environ["MUJOCO_GL"] = "osmesa"
        os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")


def _rendering_env(env_id: str, kwargs: dict[str, Any]) -> gym.Env:
    """``env_id`` as given: a spawned process imports a ``module:`` id's module itself, to register its env."""
    if multiprocessing.parent_process() is not None:  # a rendering subprocess (the parent only reads the spaces)
        headless_mujoco()
    return gym.make(registered_id(env_id), render_mode="rgb_array", **kwargs)


def first_frame(envs: gym.vector.VectorEnv) -> Any:
    """Env 0's frame of a ``rendering_vector_env`` (the others are not rendered where that can be avoided)."""
    envs = envs.unwrapped
    if isinstance(envs, gym.vector.SyncVectorEnv):
        return envs.envs[0].render()
    return envs.call("render")[0]
