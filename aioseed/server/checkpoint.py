"""Checkpoints through tf.train.CheckpointManager: model, optimizer and counters."""

from __future__ import annotations

import pathlib
from typing import Any

import structlog
import tensorflow as tf

from aioseed.server.training import Progress

log = structlog.get_logger()


class Checkpointer:
    """Verbs: ``restore`` the latest, ``save`` now. Call both from the train thread."""

    def __init__(self, directory: pathlib.Path, objects: dict[str, Any], max_to_keep: int = 3) -> None:
        self._train_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._frames = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._checkpoint = tf.train.Checkpoint(train_steps=self._train_steps, frames=self._frames, **objects)
        self._manager = tf.train.CheckpointManager(self._checkpoint, str(directory), max_to_keep=max_to_keep)

    @property
    def latest(self) -> str | None:
        return self._manager.latest_checkpoint

    def restore(self) -> Progress | None:
        """Restores the latest checkpoint, if any, and returns its counters."""
        path = self._manager.latest_checkpoint
        if path is None:
            return None
        self._checkpoint.restore(path).assert_existing_objects_matched()
        progress = Progress(int(self._train_steps.numpy()), int(self._frames.numpy()))
        log.info("checkpoint_restored", path=path, train_steps=progress.train_steps, frames=progress.frames)
        return progress

    def save(self, progress: Progress) -> str:
        self._train_steps.assign(progress.train_steps)
        self._frames.assign(progress.frames)
        path = self._manager.save(checkpoint_number=progress.train_steps)
        log.info("checkpoint_saved", path=path, train_steps=progress.train_steps, frames=progress.frames)
        return path
