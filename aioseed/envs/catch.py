"""Catch from pixels: bsuite's Catch (Osband et al. 2020) drawn as an image.

A ball starts in a random column of the top row and falls one row per step; the
agent moves a paddle along the bottom row (left, stay, right). When the ball
reaches the bottom the episode terminates with +1 if the paddle is under it and
-1 otherwise, so an episode is ``rows - 1`` steps and a perfect policy scores 1.
The observation is one grayscale frame ``uint8[1, size, size]`` (channels first,
as stacked Atari frames are), so the pixel path, the Nature CNN included, learns
it in about a minute: a regression test that CartPole's vectors cannot give.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

LEFT, STAY, RIGHT = 0, 1, 2


class Catch(gym.Env[np.ndarray, np.int64]):
    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, rows: int = 10, columns: int = 5, size: int = 84, render_mode: str | None = None) -> None:
        if rows < 2 or columns < 1:
            raise ValueError(f"Catch needs rows >= 2 and columns >= 1, got {rows} x {columns}")
        if size < max(rows, columns):
            raise ValueError(f"size {size} cannot draw a {rows} x {columns} grid")
        self.rows, self.columns, self.size = rows, columns, size
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(0, 255, (1, size, size), np.uint8)
        self.action_space = gym.spaces.Discrete(3)
        # Pixel bounds of each grid cell: the grid fills the image, cells as even as integers allow.
        self._row_edges = np.linspace(0, size, rows + 1).astype(int)
        self._column_edges = np.linspace(0, size, columns + 1).astype(int)
        self._ball = (0, 0)
        self._paddle = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._ball = (0, int(self.np_random.integers(self.columns)))
        self._paddle = self.columns // 2
        return self._observation(), {}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict]:
        if not self.action_space.contains(action):
            raise ValueError(f"action {action!r} is not in {self.action_space}")
        self._paddle = int(np.clip(self._paddle + int(action) - 1, 0, self.columns - 1))
        row, column = self._ball
        self._ball = (row + 1, column)
        terminated = self._ball[0] == self.rows - 1
        reward = (1.0 if column == self._paddle else -1.0) if terminated else 0.0
        return self._observation(), reward, terminated, False, {}

    def render(self) -> np.ndarray:
        """The frame as RGB ``uint8[size, size, 3]``."""
        return np.repeat(self._observation()[0, :, :, None], 3, axis=-1)

    def _observation(self) -> np.ndarray:
        frame = np.zeros((1, self.size, self.size), np.uint8)
        self._fill(frame, *self._ball)
        self._fill(frame, self.rows - 1, self._paddle)
        return frame

    def _fill(self, frame: np.ndarray, row: int, column: int) -> None:
        r, c = self._row_edges, self._column_edges
        frame[0, r[row] : r[row + 1], c[column] : c[column + 1]] = 255
