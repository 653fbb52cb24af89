"""``aioseed serve``'s policy: a checkpoint's agent acting on evaluation rows, reloaded in place when the run it
comes from writes a newer checkpoint (``--watch``). A lock that inference also holds keeps a reload between
batches: no batch sees half of one, and no stream is dropped."""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import structlog

log = structlog.get_logger()

Act = Callable[[np.ndarray, dict[str, np.ndarray], np.ndarray, "np.ndarray | None"], tuple[np.ndarray, dict[str, np.ndarray]]]
"""(observations, recurrent state, rewards, right-side rows or None) -> (actions, next state): ``aioseed.compose.policy.Act``."""


class ServedPolicy:
    """Verbs: ``infer`` and ``infer_sides`` (a ``SidedPolicy``: the action only, for rows that are never stored),
    ``reload``, ``metrics``."""

    def __init__(self, act: Act, restore: Callable[[str], Any], checkpoint: str, frames: int, train_steps: int) -> None:
        """``act``: the agent as one function (``aioseed.compose.policy.acting_function``: sampled, epsilon-greedy or
        greedy); ``restore(path)``: loads a checkpoint into the agent, returning its Progress; ``checkpoint``,
        ``frames``, ``train_steps``: what is served now."""
        self._act = act
        self._restore = restore
        self._lock = threading.Lock()
        self.checkpoint = checkpoint
        self.frames = frames
        self.train_steps = train_steps
        self.reloads = 0

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        return self.infer_sides(observations, state, slots, evaluation, rewards, None)

    def infer_sides(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None,
        evaluation: np.ndarray | None,
        rewards: np.ndarray | None,
        right: np.ndarray | None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """``right``: right-side players' rows, which a run with a policy per side answers with its right policy."""
        reward = np.zeros(len(observations), np.float32) if rewards is None else rewards
        with self._lock:
            actions, next_state = self._act(observations, dict(state), reward, right)
        return {"action": np.asarray(actions)}, next_state

    def reload(self, path: str) -> None:
        """Loads checkpoint ``path`` (call from a thread: inference waits for it, between batches)."""
        with self._lock:
            progress = self._restore(path)
        self.checkpoint, self.frames, self.train_steps = path, progress.frames, progress.train_steps
        self.reloads += 1
        log.info("checkpoint_reloaded", path=path, frames=self.frames, train_steps=self.train_steps)

    def metrics(self) -> dict[str, float]:
        return {
            "serve/train_steps": float(self.train_steps),
            "serve/frames": float(self.frames),
            "serve/checkpoint": float(checkpoint_number(self.checkpoint)),
            "serve/reloads": float(self.reloads),
        }


def checkpoint_number(path: str) -> int:
    """``.../ckpt-160`` -> 160 (-1 for a path of another form)."""
    _, _, number = pathlib.Path(path).name.rpartition("-")
    return int(number) if number.isdigit() else -1
