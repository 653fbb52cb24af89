"""TensorBoard summaries of learner metric snapshots."""

from __future__ import annotations

import math
import pathlib

import tensorflow as tf


class SummaryWriter:
    def __init__(self, logdir: pathlib.Path) -> None:
        self._writer = tf.summary.create_file_writer(str(logdir / "tensorboard"))

    def __call__(self, snapshot: dict[str, float], frames: int) -> None:
        with self._writer.as_default(step=frames):
            for name, value in snapshot.items():
                if name != "time" and not math.isnan(value):
                    tf.summary.scalar(name, value)
        self._writer.flush()
