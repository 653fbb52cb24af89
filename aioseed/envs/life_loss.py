"""A lost life as the end of a training episode while the game plays on (``--atari.episodic-life``).

CleanRL's Atari recipe (and openai/baselines' before it) wraps each game in ``EpisodicLifeEnv`` and
``FireResetEnv``: a lost life is a terminal transition for the learner, the frame stack restarts, and FIRE
relaunches the ball, but the game is not reset and its recorded return is the whole game's. ale-py's and
EnvPool's own ``episodic_life`` reset the whole game at every lost life instead, so aioseed does it here, on
the vector env: it reads ``lives`` from the step infos, marks each row that lost a life in
``infos["life_lost"]`` (the actor turns it into a ``LIFE_LOST`` row, ``aioseed.types``), and runs FIRE (or
NOOP, in games without FIRE) in place of that env's next action.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from aioseed.envs.stack_start import since_start, zero_before_start

LIFE_LOST_INFO = "life_lost"
"""The step infos' <bool>[K]: the env lost a life in this step and its game goes on."""

NOT_IN_IMPALA_MODE = (
    "IMPALA-mode unrolls carry no lost lives, so the learner would report a return per life; "
    "train --atari.episodic-life with architecture seed"
)
"""Why ``--atari.episodic-life`` and ``--architecture impala`` are refused together, by learner and actor."""


class LifeLoss(gym.vector.VectorWrapper):
    """Marks lost lives in the step infos and relaunches each such env with ``relaunch_action`` on its next step,
    whatever action it is given. Terminations and truncations pass through unchanged: they end whole games.

    With ``stack`` > 1 (observations of [K, stack, ...] stacked by the env), the stack restarts with the new
    training episode, as the learner's ``FrameStacker`` and CleanRL's FrameStack do: the frames from before the
    relaunch are zeros, the first ``stack - 1`` steps of it."""

    def __init__(self, env: gym.vector.VectorEnv, relaunch_action: int, stack: int = 1) -> None:
        super().__init__(env)
        self.relaunch_action = relaunch_action
        self._stack = stack
        self._lives = np.zeros(self.num_envs, np.int64)
        self._relaunch = np.zeros(self.num_envs, bool)
        self._since = np.full(self.num_envs, stack, np.int64)
        """Steps since each env's relaunch (its newest frames of the new life)."""

    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observations, infos = self.env.reset(seed=seed, options=options)
        self._lives = _lives(infos, self.num_envs)
        self._relaunch[:] = False
        self._since[:] = self._stack
        return observations, infos

    def step(self, actions: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self._relaunch.any():
            actions = np.where(self._relaunch, self.relaunch_action, np.asarray(actions))
        observations, rewards, terminated, truncated, infos = self.env.step(actions)
        self._since = since_start(self._since, self._relaunch)
        observations = zero_before_start(observations, self._since, self._stack)
        lives = _lives(infos, self.num_envs)
        # A reset row's lives go back up; a game that ends reports its last life lost as the termination.
        lost = (lives < self._lives) & ~np.asarray(terminated, bool) & ~np.asarray(truncated, bool)
        self._lives, self._relaunch = lives, lost
        infos = dict(infos)
        infos[LIFE_LOST_INFO] = lost
        return observations, rewards, terminated, truncated, infos


def _lives(infos: dict[str, Any], num_envs: int) -> np.ndarray:
    if "lives" not in infos:
        raise ValueError("--atari.episodic-life needs the env to report its lives in the step infos")
    return np.asarray(infos["lives"], np.int64).reshape(num_envs)
