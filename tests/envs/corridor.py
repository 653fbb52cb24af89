"""A user's own environment, as docs/environments.md writes it: importing this module registers
``Corridor-v0``, so ``--env tests.envs.corridor:Corridor-v0`` runs it (``--env-kwargs '{"length": 4}'``)."""

import gymnasium as gym
import numpy as np


class Corridor(gym.Env):
    """Walk right (action 1) from cell 0 to the last cell for a reward of 1, paying 0.01 a step on the way."""

    def __init__(self, length: int = 8) -> None:
        self.length = length
        self.observation_space = gym.spaces.Box(0.0, 1.0, (length,), np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def _observation(self) -> np.ndarray:
        return np.eye(self.length, dtype=np.float32)[self.position]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.position = 0
        return self._observation(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.position = int(np.clip(self.position + (1 if action == 1 else -1), 0, self.length - 1))
        arrived = self.position == self.length - 1
        return self._observation(), 1.0 if arrived else -0.01, arrived, False, {}


gym.register("Corridor-v0", entry_point=Corridor, max_episode_steps=100)


class DictCorridor(Corridor):
    """The same walk seen through a Dict observation space, which aioseed cannot serve as it is."""

    def __init__(self, length: int = 8) -> None:
        super().__init__(length)
        self.observation_space = gym.spaces.Dict({"cell": gym.spaces.Discrete(length)})


gym.register("DictCorridor-v0", entry_point=DictCorridor)
