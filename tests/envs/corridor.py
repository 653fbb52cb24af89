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


class BrokenCorridor(Corridor):
    """A Corridor whose engine fails at its first step: an env that crashes its actors (not the learner, which
    only reads its spaces)."""

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        raise RuntimeError("the corridor's engine crashed")


gym.register("BrokenCorridor-v0", entry_point=BrokenCorridor)


class TextCorridor(Corridor):
    """The same walk seen through a Text observation space, which aioseed cannot serve."""

    def __init__(self, length: int = 8) -> None:
        super().__init__(length)
        self.observation_space = gym.spaces.Text(8)


gym.register("TextCorridor-v0", entry_point=TextCorridor)


class TwinCorridors(gym.Env):
    """Two walkers, one per corridor, steered together by a MultiDiscrete([2, 2]) action (1: right), seen
    through a Dict observation of both cells; a reward of 1 once both reach their ends, -0.01 a step before."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, length: int = 4, render_mode: str | None = None) -> None:
        self.length, self.render_mode = length, render_mode
        self.observation_space = gym.spaces.Dict({"left": gym.spaces.Discrete(length), "right": gym.spaces.Discrete(length)})
        self.action_space = gym.spaces.MultiDiscrete([2, 2])

    def render(self) -> np.ndarray:
        """Two rows of cells, the walkers' cells lit."""
        frame = np.zeros((2, self.length, 3), np.uint8)
        frame[[0, 1], self.cells] = 255
        return frame

    def _observation(self) -> dict[str, int]:
        return {"left": int(self.cells[0]), "right": int(self.cells[1])}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict[str, int], dict]:
        super().reset(seed=seed)
        self.cells = np.zeros(2, np.int64)
        return self._observation(), {}

    def step(self, action: np.ndarray) -> tuple[dict[str, int], float, bool, bool, dict]:
        self.cells = np.clip(self.cells + np.where(np.asarray(action) == 1, 1, -1), 0, self.length - 1)
        arrived = bool((self.cells == self.length - 1).all())
        return self._observation(), 1.0 if arrived else -0.01, arrived, False, {}


gym.register("TwinCorridors-v0", entry_point=TwinCorridors, max_episode_steps=50)
