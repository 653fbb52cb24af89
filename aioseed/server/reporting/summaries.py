"""TensorBoard summaries of learner metric snapshots."""

from __future__ import annotations

import math
import pathlib
from collections.abc import Sequence

import tensorflow as tf

EPISODE_RETURN = "charts/episode_return"
"""A training episode's return, at the frames it ended (aioseed.results.curves reads it)."""


class SummaryWriter:
    def __init__(self, logdir: pathlib.Path) -> None:
        self._writer = tf.summary.create_file_writer(str(logdir / "tensorboard"))

    def __call__(self, snapshot: dict[str, float], frames: int, ended: Sequence[tuple[int, float]] = (), flush: bool = True) -> None:
        """The snapshot at ``frames``; ``ended``: each episode's return at the frames it ended, as
        charts/episode_return (a run's curve episode by episode)."""
        with self._writer.as_default(step=frames):
            for name, value in snapshot.items():
                if name != "time" and not math.isnan(value):
                    tf.summary.scalar(name, value)
            for at, value in ended:
                tf.summary.scalar(EPISODE_RETURN, value, step=at)
        if flush:
            self._writer.flush()
