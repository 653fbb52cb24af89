"""K environments stepped together and their pending row (the actor's side of the done convention)."""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym
import numpy as np

from aioseed.proto import aioseed_pb2 as pb
from aioseed.spec import EnvSpec

TERMINATED = 1
TRUNCATED = 2


class EnvGroup:
    """Verbs: ``message`` (the pending rows as a Steps message), ``step`` with the learner's actions.

    On termination the env is reset at once and its row carries the final reward,
    TERMINATED and the next episode's first observation. On truncation the row
    carries the final reward, TRUNCATED and the *final* observation; the action
    the learner sends back for it is ignored, and the env's next row is the
    reset observation with reward 0.
    """

    def __init__(self, envs: Sequence[gym.Env], spec: EnvSpec, run_ids: np.ndarray, seed: int | None = None) -> None:
        self.envs = list(envs)
        self.spec = spec
        self.run_ids = np.asarray(run_ids, np.uint64)
        k = len(self.envs)
        self.observations = np.zeros((k, *spec.observation_shape), spec.dtype)
        self.rewards = np.zeros(k, np.float32)
        self.flags = np.zeros(k, np.uint8)
        self._needs_reset = np.zeros(k, bool)
        self.steps = 0
        """Env steps executed so far."""
        for i, env in enumerate(self.envs):
            obs, _ = env.reset(seed=None if seed is None else seed + i)
            self.observations[i] = obs

    def __len__(self) -> int:
        return len(self.envs)

    def message(self, slots: np.ndarray) -> pb.ActorMessage:
        return pb.ActorMessage(
            steps=pb.Steps(
                slots=slots.astype("<i4").tobytes(),
                run_ids=self.run_ids.astype("<u8").tobytes(),
                rewards=self.rewards.astype("<f4").tobytes(),
                flags=self.flags.tobytes(),
                observations=self.observations.tobytes(),
            )
        )

    def step(self, actions: np.ndarray) -> None:
        for i, env in enumerate(self.envs):
            if self._needs_reset[i]:
                obs, _ = env.reset()
                self._needs_reset[i] = False
                self.rewards[i] = 0.0
                self.flags[i] = 0
                self.observations[i] = obs
                continue
            obs, reward, terminated, truncated, _ = env.step(int(actions[i]))
            self.steps += 1
            self.rewards[i] = reward
            if terminated:
                obs, _ = env.reset()
                self.flags[i] = TERMINATED
            elif truncated:
                self.flags[i] = TRUNCATED
                self._needs_reset[i] = True
            else:
                self.flags[i] = 0
            self.observations[i] = obs

    def close(self) -> None:
        for env in self.envs:
            env.close()
