"""Learner-side frame stacking (pure NumPy): actors send only the newest frame, 4x less traffic.

Each slot keeps its last ``depth`` frames. A row that starts an episode (or a
fresh unroll after a reconnect) clears the slot's stack first, so the result
equals ale-py's own stacking: zeros, then the episode's frames.
"""

from __future__ import annotations

import numpy as np

from aioseed.server.acting.core_states import grown


class FrameStacker:
    """Verbs: ``push`` one frame per slot and get the stacks back."""

    def __init__(self, depth: int) -> None:
        if depth < 2:
            raise ValueError(f"depth must be >= 2, got {depth}")
        self.depth = depth
        self._stacks: np.ndarray | None = None

    def push(self, slots: np.ndarray, frames: np.ndarray, new_episode: np.ndarray) -> np.ndarray:
        """``frames[B, 1, *frame]`` -> ``stacks[B, depth, *frame]``; clears the stacks where ``new_episode``."""
        if frames.shape[1] != 1:
            raise ValueError(f"expected single frames [B, 1, ...], got {frames.shape}")
        self._ensure(frames, int(slots.max()) + 1 if len(slots) else 0)
        assert self._stacks is not None
        stacks = self._stacks[slots]
        stacks[new_episode] = 0
        stacks = np.concatenate([stacks[:, 1:], frames], axis=1)
        self._stacks[slots] = stacks
        return stacks

    def _ensure(self, frames: np.ndarray, size: int) -> None:
        old = self._stacks
        if old is not None and len(old) >= size:
            return
        capacity = max(size, 2 * len(old) if old is not None else 16)
        if old is None:
            old = np.zeros((0, self.depth, *frames.shape[2:]), frames.dtype)
        self._stacks = grown(old, capacity)
