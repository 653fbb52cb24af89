"""A trivial agent (no TensorFlow) so that transport benchmarks measure the learner's plumbing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aioseed.algos.agent import no_callback
from aioseed.spec import EnvSpec


class NullAgent:
    """Always action 0; the train step only touches the batch. Implements ``Agent``."""

    burn_in = 0
    uses_replay = False

    def __init__(self, spec: EnvSpec) -> None:
        self.spec = spec
        self._learning_rate = 0.0

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {"action": ((), np.int32)}

    def state_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {}

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        return {"action": np.zeros(len(observations), np.int32)}, {}

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = no_callback) -> dict[str, float]:
        on_update()
        return {"losses/total": float(batch["reward"].sum())}

    def checkpoint_objects(self) -> dict[str, Any]:
        return {}

    @property
    def learning_rate(self) -> float:
        return self._learning_rate

    @property
    def current_learning_rate(self) -> float:
        return self._learning_rate

    def set_learning_rate(self, value: float) -> None:
        self._learning_rate = value

    def set_progress(self, frames: int) -> None:
        pass
