"""``--env-backend envpool``: Atari, MuJoCo and Google Research Football stepped by EnvPool's C++
thread pool (``pip install 'aioseed[envpool]'``), as a gymnasium vector env with next-step autoreset.

EnvPool's autoreset is gymnasium's next-step one: the step after an episode's last returns the new
episode's first observation with reward 0 and ignores its action, which is aioseed's done convention.

What maps to what:
- ``ALE/<Game>-v5`` -> EnvPool's ``<Game>-v5`` with the ``--atari`` settings (frame skip, stack, no-op
  starts, sticky actions, episodic life, FIRE reset, the frame cap); rewards unclipped, 84 x 84 grey
  frames resized with INTER_AREA as ale-py's vector env does.
- ``football:<scenario>`` -> ``gfootball/<scenario>-v1``: the Super Mini Map (uint8[72, 96, 4]) and
  scoring rewards, one controlled player. EnvPool's port offers no other representation, reward or
  player count: other ``--football`` settings are refused.
- A gymnasium id EnvPool also registers (``Hopper-v5``, ``HalfCheetah-v5``, ``CartPole-v1``...) -> that
  id, with Box actions declared float32 as gymnasium's envs declare them.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from aioseed.envs.atari import AtariConfig, is_atari, with_life_loss
from aioseed.envs.flatten import flattened
from aioseed.envs.football import FootballConfig, is_football, scenario_name
from aioseed.envs.stack_start import since_start, zero_before_start
from aioseed.errors import InvalidInput


def envpool_task(env_id: str) -> str:
    """EnvPool's task id for ``env_id``; InvalidInput for an env EnvPool does not have."""
    try:
        import envpool
    except ImportError:
        raise InvalidInput("--env-backend envpool needs EnvPool: pip install 'aioseed[envpool]'") from None

    if is_atari(env_id):
        task = env_id.removeprefix("ALE/")
    elif is_football(env_id):
        task = f"gfootball/{scenario_name(env_id)}-v1"
    else:
        task = env_id
    if task not in envpool.list_all_envs():
        raise InvalidInput(f"--env-backend envpool has no {task!r} for {env_id} (EnvPool {envpool.__version__})")
    return task


def envpool_settings(env_id: str, atari: AtariConfig, football: FootballConfig) -> dict[str, Any]:
    """EnvPool's keyword arguments for ``env_id`` under aioseed's Atari and Football settings."""
    if is_atari(env_id):
        return {
            "frame_skip": atari.frameskip, "stack_num": atari.stack,
            # EnvPool draws from [0, noop_max - 1]: 0 crashes the pool's threads, and 1 means no no-ops, as 0 does here.
            "noop_max": max(atari.noop_max, 1),
            "repeat_action_probability": atari.sticky_action_probability, "episodic_life": False,
            "use_fire_reset": atari.fire_reset, "max_episode_steps": atari.max_episode_frames // atari.frameskip,
            "reward_clip": False, "img_height": 84, "img_width": 84, "gray_scale": True, "use_inter_area_resize": True,
            "num_threads": atari.num_threads,
        }
    if is_football(env_id):
        if football != FootballConfig():
            raise InvalidInput(
                "--env-backend envpool plays Football from the Super Mini Map with scoring rewards only: leave the "
                f"--football settings at their defaults (got {football})"
            )
        return {}
    return {}


class EnvPoolVectorEnv(gym.vector.VectorEnv):
    """An EnvPool pool as a gymnasium vector env. The pool is built on the first ``reset``, whose seed
    seeds it (EnvPool seeds env i with seed + i). EnvPool fills a new Atari episode's frame stack with its
    first frame; here the earlier slots are zeros, as ale-py's are (and ``aioseed eval``'s, which is ale-py)."""

    metadata = {"autoreset_mode": gym.vector.AutoresetMode.NEXT_STEP}

    def __init__(self, task: str, num_envs: int, settings: dict[str, Any]) -> None:
        import envpool

        self._task, self._settings = task, settings
        probe = envpool.make_gymnasium(task, num_envs=1, **settings)
        self.num_envs = num_envs
        self.single_observation_space = probe.observation_space
        self.single_action_space = _float32_box(probe.action_space)
        probe.close()
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)
        self._pool: Any = None
        self._stack = int(settings.get("stack_num", 1))
        self._since = np.ones(num_envs, np.int64)
        self._ended = np.zeros(num_envs, bool)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        import envpool

        if self._pool is None or seed is not None:
            if self._pool is not None:
                self._pool.close()
            seed = int(np.random.SeedSequence().generate_state(1)[0] >> 1) if seed is None else seed
            self._pool = envpool.make_gymnasium(self._task, num_envs=self.num_envs, seed=seed, **self._settings)
        observations, info = self._pool.reset()
        self._since[:], self._ended[:] = 1, False
        return zero_before_start(observations, self._since, self._stack), info

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if isinstance(self.single_action_space, gym.spaces.Box):
            actions = np.asarray(actions, self._pool.action_space.dtype)
        observations, rewards, terminated, truncated, info = self._pool.step(actions)
        self._since = since_start(self._since, self._ended)  # next-step autoreset: the row after an end starts
        self._ended = np.asarray(terminated, bool) | np.asarray(truncated, bool)
        observations = zero_before_start(observations, self._since, self._stack)
        return observations, rewards.astype(np.float32), terminated, truncated, info

    def close_extras(self, **kwargs: Any) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def _float32_box(space: gym.Space) -> gym.Space:
    """EnvPool declares MuJoCo's actions float64; gymnasium's envs (and so the learner's spec) float32."""
    if isinstance(space, gym.spaces.Box) and space.dtype != np.float32:
        return gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)
    return space


def make_envpool_vector_env(
    env_id: str, num_envs: int, atari: AtariConfig = AtariConfig(), football: FootballConfig = FootballConfig()
) -> gym.vector.VectorEnv:
    envs = EnvPoolVectorEnv(envpool_task(env_id), num_envs, envpool_settings(env_id, atari, football))
    if is_atari(env_id):
        return with_life_loss(envs, env_id, atari)
    return flattened(envs)  # Taxi's Discrete(500) as the one-hot the other backends serve
