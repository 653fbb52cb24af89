"""TensorBoard summaries of learner metric snapshots."""

from __future__ import annotations

import math
import pathlib
from collections.abc import Sequence

import tensorflow as tf

EPISODES = "charts/episode_returns"
"""The training episodes that ended since the last summary: a float64[N, 2] tensor of (frames when it
ended, return), one write per summary (a scalar per episode cost ~0.5 ms each here); aioseed.results.curves
reads it back."""


class SummaryWriter:
    def __init__(self, logdir: pathlib.Path) -> None:
        self._writer = tf.summary.create_file_writer(str(logdir / "tensorboard"))

    def __call__(self, snapshot: dict[str, float], frames: int, ended: Sequence[tuple[int, float]] = (), flush: bool = True) -> None:
        """The snapshot at ``frames``; ``ended``: (frames, return) of each episode that ended since the last
        call, as one ``EPISODES`` tensor (a run's curve episode by episode)."""
        with self._writer.as_default(step=frames):
            for name, value in snapshot.items():
                if name != "time" and not math.isnan(value):
                    tf.summary.scalar(name, value)
            if ended:
                tf.summary.write(EPISODES, tf.constant(ended, tf.float64))
        if flush:
            self._writer.flush()
