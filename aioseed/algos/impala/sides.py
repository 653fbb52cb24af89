"""One V-trace policy per side of a multi-player game (``--self-play.opponent separate``).

Football's left and right players get two networks of the same architecture, each with
its own optimizer, observation normalizer and learning-rate schedule, and each trained
only on its own side's unrolls. Rows say which side they are (``Rows["right"]``); every
stored step keeps it in the ``side`` column, so a train batch that holds both sides' unrolls
is split between the two policies. An unroll never mixes sides: a slot's rows all belong to
one player, and a slot that a new stream takes starts a fresh unroll.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from aioseed.algos.agent import SKIPPED, no_callback
from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.by_side import infer_by_side
from aioseed.types import Column

SIDE = "side"
"""The output column (<int8>, 0 left, 1 right) that keeps each stored step's side."""

RIGHT_PREFIX = "right_"
"""Checkpoint names of the right side's objects (the left side's keep a single policy's names)."""


class SidedAgent:
    """Two ``ImpalaAgent``s, one per side. Implements ``aioseed.algos.agent.Agent``; ``infer_sides`` acts on rows
    of both sides (``infer``: left-side rows only).

    The learner's parameter version counts the updates of both policies. The metrics of a train step are the left
    policy's; the right policy's follow under ``right/``. The exported policy (``policy``, ``network``) is the left
    side's; ``right`` is the right side's agent.
    """

    uses_replay = False
    burn_in = 0

    def __init__(self, left: ImpalaAgent, right: ImpalaAgent) -> None:
        if left.replicas.count > 1:
            raise ValueError("self_play.opponent separate trains on one device: each side's share of a batch varies")
        self.left = left
        self.right = right
        self.spec = left.spec
        self.config = left.config
        self.replicas = left.replicas
        self.policy = left.policy
        self.network = left.network
        self.distribution = left.distribution

    def output_columns(self) -> Mapping[str, Column]:
        return {**self.left.output_columns(), SIDE: ((), np.int8)}

    def state_columns(self) -> Mapping[str, Column]:
        return self.left.state_columns()

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Rows of left-side players."""
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
        """Each row by its side's policy (``right``: <bool>[B] right-side rows; None: none), in row order, with
        the ``side`` column."""
        right = np.zeros(len(observations), bool) if right is None else np.asarray(right, bool)
        outputs, next_state = infer_by_side(right, self.left.infer, self.right.infer, observations, state, slots, evaluation, rewards)
        outputs[SIDE] = right.astype(np.int8)
        return outputs, next_state

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = no_callback) -> dict[str, float]:
        """Each side's unrolls train that side's policy (``epochs`` x ``minibatches`` updates each with sample reuse)."""
        right = batch[SIDE][0].astype(bool)  # [B]: an unroll's side is its first step's
        per_unroll = {"slot", *self.state_columns()}
        metrics: dict[str, float] = {SKIPPED: 0.0}
        for rows, agent, prefix in ((~right, self.left, ""), (right, self.right, "right/")):
            if not rows.any():
                continue
            share = {name: column[rows] if name in per_unroll else column[:, rows] for name, column in batch.items()}
            result = agent.train_step(share, on_update)
            metrics[SKIPPED] += result.pop(SKIPPED)
            metrics.update({f"{prefix}{name}": value for name, value in result.items()})
        return metrics

    def set_progress(self, frames: int) -> None:
        self.left.set_progress(frames)
        self.right.set_progress(frames)

    def change_settings(self, config: Any) -> None:
        """Both sides' settings."""
        self.left.change_settings(config)
        self.right.change_settings(config)

    def checkpoint_objects(self) -> dict[str, Any]:
        right = {f"{RIGHT_PREFIX}{name}": value for name, value in self.right.checkpoint_objects().items()}
        return {**self.left.checkpoint_objects(), **right}

    def set_learning_rate(self, value: float) -> None:
        """Both sides' base rate."""
        self.left.set_learning_rate(value)
        self.right.set_learning_rate(value)

    @property
    def learning_rate(self) -> float:
        return self.left.learning_rate

    @property
    def current_learning_rate(self) -> float:
        return self.left.current_learning_rate
