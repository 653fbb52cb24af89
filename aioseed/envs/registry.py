"""Environments the actors step and the spec the learner serves: any gymnasium id (aioseed/ ids are
registered by this package; ``my_pkg.envs:MyEnv-v0`` imports ``my_pkg.envs`` first, which registers
``MyEnv-v0``, as ``gymnasium.make`` does), as a vector env with next-step autoreset."""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from typing import Any, Literal

import gymnasium as gym

from aioseed.envs.atari import AtariConfig, is_atari, make_atari_vector_env
from aioseed.envs.flatten import flattened
from aioseed.envs.football import FootballConfig, check_scenario, football_spec, is_football
from aioseed.envs.football_players import make_football_vector_env
from aioseed.errors import InvalidInput, UnsupportedEnv, close_matches
from aioseed.spec import EnvSpec

EnvBackend = Literal["default", "envpool"]
"""What steps an actor's envs: default (ale-py's vector env for ALE/ ids, gfootball's engines for football:
ids, gymnasium's vector env otherwise) or envpool (EnvPool's C++ thread pool; aioseed[envpool])."""


def env_kwargs(text: str) -> dict[str, Any]:
    """The JSON object of an ``--env-kwargs`` flag, as keyword arguments."""
    try:
        kwargs = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"env_kwargs is not JSON ({exc.msg} at character {exc.pos}): {text[:80]!r}") from None
    if not isinstance(kwargs, dict):
        raise ValueError(f"env_kwargs must be a JSON object such as '{{\"size\": 8}}', got {text[:80]!r}")
    return kwargs


def registered_id(env_id: str) -> str:
    """``env_id`` once its module is imported: ``my_pkg.envs:MyEnv-v0`` imports ``my_pkg.envs`` (which
    registers ``MyEnv-v0``) and gives ``MyEnv-v0``; other ids are returned as they are. A UserError, with the
    closest registered ids, for an id gymnasium does not know (ALE/ ids: ale-py's games)."""
    if is_football(env_id):
        return env_id
    if is_atari(env_id):
        import ale_py  # noqa: F401  (registers the ALE/ ids)
    name = env_id
    if ":" in env_id:
        module, _, name = env_id.partition(":")
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            raise InvalidInput(f"env {env_id}: cannot import {module!r} ({exc}); is it installed on this machine?") from None
        if name not in gym.registry:
            raise InvalidInput(f"env {env_id}: importing {module!r} registered no env named {name!r}{close_matches(name, gym.registry)}")
    elif name not in gym.registry:
        raise InvalidInput(
            f"unknown env {env_id!r}{close_matches(env_id, gym.registry)} Gymnasium ids, ALE/<Game>-v5, "
            "football:<scenario> and my_pkg.module:MyEnv-v0 work (gymnasium.pprint_registry() lists the registered ids)"
        )
    return name


def check_env_id(env_id: str) -> None:
    """A UserError, with the closest known ids, for an env id nothing registers (before anything is built)."""
    if is_football(env_id):
        check_scenario(env_id)
    else:
        registered_id(env_id)


def make_vector_env(
    env_id: str,
    num_envs: int,
    atari: AtariConfig = AtariConfig(),
    football: FootballConfig = FootballConfig(),
    kwargs: Mapping[str, Any] | None = None,
    backend: EnvBackend = "default",
) -> gym.vector.VectorEnv:
    """``num_envs`` copies of ``env_id`` stepped together (``kwargs`` go to each env's constructor).

    ``ALE/...`` ids run ale-py's vector env with ``atari``; ``football:<scenario>``
    ids run gfootball engines with ``football``.

    Uses the env's own vectorized implementation when it registers one (e.g.
    CartPole's NumPy ``CartPoleVectorEnv``), otherwise a ``SyncVectorEnv``.
    Either way the autoreset mode is gymnasium's default, next-step: the step
    after an episode's final observation resets that env and ignores its action.
    ``backend`` envpool steps them in EnvPool's C++ threads instead
    (``aioseed.envs.envpool_backend``).
    """
    if (is_atari(env_id) or is_football(env_id)) and kwargs:
        raise InvalidInput(f"env_kwargs go to gymnasium envs; {env_id} takes its settings from the atari/football flags")
    if backend == "envpool":
        if kwargs:
            raise InvalidInput("--env-backend envpool takes no env_kwargs")
        from aioseed.envs.envpool_backend import make_envpool_vector_env

        return make_envpool_vector_env(env_id, num_envs, atari, football)
    env_id = registered_id(env_id)
    if is_atari(env_id):
        return make_atari_vector_env(env_id, num_envs, atari)
    if is_football(env_id):
        return make_football_vector_env(env_id, num_envs, football)
    spec = gym.spec(env_id)
    mode = "vector_entry_point" if spec.vector_entry_point is not None else "sync"
    vector = {} if mode == "vector_entry_point" else {"vector_kwargs": {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}}
    try:
        envs = gym.make_vec(env_id, num_envs=num_envs, vectorization_mode=mode, **vector, **dict(kwargs or {}))
    except TypeError as exc:
        if not kwargs or "argument" not in str(exc):
            raise
        raise InvalidInput(f"env_kwargs {dict(kwargs)} do not fit {env_id}: {exc}") from None
    autoreset = envs.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
    if autoreset != gym.vector.AutoresetMode.NEXT_STEP:
        raise InvalidInput(f"{env_id}: aioseed needs next-step autoreset, the vector env uses {autoreset}")
    return flattened(envs)


def vector_env_spec(env_id: str, envs: gym.vector.VectorEnv, atari: AtariConfig = AtariConfig()) -> EnvSpec:
    """The spec of one of ``envs`` (made by ``make_vector_env(env_id, ..., atari)``); a vector env whose rows are a
    game's players (``PlayersVectorEnv``) says how many in its ``players``."""
    frames_per_step = atari.frameskip if is_atari(env_id) else 1
    players = getattr(envs.unwrapped, "players", (1, 0))
    try:
        return EnvSpec.from_spaces(envs.single_observation_space, envs.single_action_space, frames_per_step, players)
    except TypeError as exc:
        raise UnsupportedEnv(f"env {env_id}: {exc}") from None


def env_spec(
    env_id: str,
    atari: AtariConfig = AtariConfig(),
    football: FootballConfig = FootballConfig(),
    kwargs: Mapping[str, Any] | None = None,
) -> EnvSpec:
    """The spec actors running ``env_id`` will declare (Football's from its settings: no engine needed here)."""
    if is_football(env_id):
        if kwargs:
            raise InvalidInput(f"env_kwargs go to gymnasium envs; {env_id} takes its settings from the football flags")
        check_scenario(env_id)
        return football_spec(football)
    envs = make_vector_env(env_id, 1, atari, football, kwargs)
    try:
        return vector_env_spec(env_id, envs, atari)
    finally:
        envs.close()
