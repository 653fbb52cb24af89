"""What the learner needs from an agent. Agents live in ``aioseed.algos.*``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from aioseed.spec import EnvSpec
from aioseed.types import Column

if TYPE_CHECKING:
    from aioseed.algos.replicas import Replicas


def zero_state(columns: Mapping[str, Column], batch: int) -> dict[str, np.ndarray]:
    """The recurrent state of ``batch`` rows at an episode's start, laid out as ``Agent.state_columns``."""
    return {name: np.zeros((batch, *shape), dtype) for name, (shape, dtype) in columns.items()}


def no_callback() -> None:
    """The default ``on_update`` of ``Agent.train_step``."""


SKIPPED = "skipped_nonfinite"
"""The ``train_step`` metric counting updates skipped for a non-finite loss or gradient."""


class Agent(Protocol):
    spec: EnvSpec
    """What the policy sees (with learner-side frame stacking, more frames than actors send)."""
    burn_in: int
    """Steps at the start of each unroll that only warm up recurrent state; unrolls overlap by burn_in + 1."""
    uses_replay: bool
    """Trains from prioritized replay (R2D2) rather than once on each unroll in order (V-trace)."""
    replicas: Replicas
    """Where it trains and infers."""

    def output_columns(self) -> Mapping[str, Column]:
        """Per-row inference outputs kept in unrolls (shape without batch, dtype); includes "action"."""
        ...

    def state_columns(self) -> Mapping[str, Column]:
        """Per-env recurrent state the learner keeps (shape without batch, dtype); empty if feedforward.

        The learner zeroes it where an episode starts, feeds it to ``infer`` and
        stores each unroll's first-step state under the same names.
        """
        ...

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Batched policy step on ``[B, *obs_shape]`` rows and their state: (outputs, next state).

        ``slots`` are the rows' env slots and ``evaluation`` (<bool>[B]) marks rows
        of evaluation envs; R2D2's exploration depends on both. ``rewards`` (<float32>[B])
        led to each row, zero where an episode starts (an input of some networks).
        Thread-safe against ``train_step``.
        """
        ...

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = ...) -> dict[str, float]:
        """Trains on time-major ``[burn_in + T + 1, B, ...]`` unrolls (state columns: ``[B, ...]``): one
        update, or several with sample reuse. ``on_update`` is called (in this thread) after each update
        applied, so the learner's parameter version moves with the weights.

        Returns scalar metrics; agents trained from replay add ``"priorities"`` (<float32>[B]), and
        ``SKIPPED`` counts the updates not applied because their loss or gradients were non-finite.
        """
        ...

    def set_progress(self, frames: int) -> None:
        """Moves the learning-rate schedule to ``frames`` of training (called before each train step)."""
        ...

    def checkpoint_objects(self) -> dict[str, Any]:
        """Trackables saved in checkpoints (model, optimizer, ...)."""
        ...

    def set_learning_rate(self, value: float) -> None: ...

    def change_settings(self, config: Any) -> None:
        """Between train steps (in the train thread): its settings with new values of the fields its algorithm
        lists as live (``aioseed.algos.builder.Algorithm.live``), which apply from the next step."""
        ...

    @property
    def learning_rate(self) -> float:
        """The base rate the console sets."""
        ...

    @property
    def current_learning_rate(self) -> float:
        """The rate in effect: the base rate times the schedule."""
        ...
