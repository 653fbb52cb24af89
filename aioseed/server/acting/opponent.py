"""Self-play's opponent: a frozen copy of the learner's policy that plays the right side of a multi-player game.

Every ``refresh_frames`` frames the learner's current weights are copied into it,
in the train thread right after an update (so the copy never mixes two versions),
and under a lock that inference also holds (so no batch sees half a copy). Its
weights, and the version and frames they were copied at, are checkpointed with
the run: a resumed run plays on against the same opponent.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np
import structlog
import tensorflow as tf

from aioseed.server.acting.step import Policy

log = structlog.get_logger()


class WeightedPolicy(Policy, Protocol):
    """A policy whose weights can be copied (``ImpalaPolicy``)."""

    def policy_variables(self) -> list[tf.Variable]: ...


class FrozenOpponent:
    """Verbs: ``infer`` (a ``Policy``), ``after_update`` (the trainer's ``on_version``), ``metrics``."""

    def __init__(self, live: WeightedPolicy, frozen: WeightedPolicy, refresh_frames: int) -> None:
        """``frozen``: a policy of ``live``'s architecture, which starts as a copy of it."""
        self._live = live
        self._frozen = frozen
        self._refresh_frames = refresh_frames
        self._lock = threading.Lock()
        self._version = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._frames_at = tf.Variable(0, dtype=tf.int64, trainable=False)
        self.refresh(0, 0)

    @property
    def version(self) -> int:
        """The learner's parameter version the opponent's weights were copied at."""
        return int(self._version.numpy())

    @property
    def frames_at(self) -> int:
        """The learner's frame count when they were copied."""
        return int(self._frames_at.numpy())

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        with self._lock:
            return self._frozen.infer(observations, state, slots, evaluation, rewards)

    def after_update(self, version: int, frames: int) -> None:
        """In the train thread after each train step (``frames``: the learner's count): a refresh once
        ``refresh_frames`` have passed since the last."""
        if frames - self.frames_at >= self._refresh_frames:
            self.refresh(version, frames)

    def refresh(self, version: int, frames: int) -> None:
        """Copies the learner's weights now (call between updates)."""
        with self._lock:
            for target, source in zip(self._frozen.policy_variables(), self._live.policy_variables(), strict=True):
                target.assign(source)
            self._version.assign(version)
            self._frames_at.assign(frames)
        if version:
            log.info("opponent_refreshed", version=version, frames=frames)

    def checkpoint_objects(self) -> dict[str, Any]:
        """What the run's checkpoints keep of the opponent (restored with them, before serving starts)."""
        weights = self._frozen.policy_variables()
        return {"opponent": tf.train.Checkpoint(weights=weights, version=self._version, frames=self._frames_at)}

    def metrics(self) -> dict[str, float]:
        return {"selfplay/opponent_version": float(self.version), "selfplay/opponent_frames": float(self.frames_at)}
