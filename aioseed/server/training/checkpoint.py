"""Checkpoints through tf.train.CheckpointManager: model, optimizer and counters."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from aioseed.control import CommandFailed, CommandRefused
from aioseed.errors import InvalidInput, MissingFile
from aioseed.server.training.checkpoint_files import check_index, first_line, latest_checkpoint, restore_error
from aioseed.server.training.trainer import Progress

log = structlog.get_logger()


class CheckpointRefused(CommandRefused):
    """The weights or optimizer state hold NaN or inf: saving them would replace a good checkpoint."""


class CheckpointFailed(CommandFailed):
    """Writing a checkpoint failed (a full disk, a directory gone or not writable); the ones written before
    are kept, and the run goes on."""


def variables_of(trackable: Any) -> list[Any]:
    """The variables a checkpoint keeps of ``trackable``: a variable, a model's or optimizer's ``variables``, or
    those a ``tf.train.Checkpoint`` holds (self-play's opponent)."""
    import tensorflow as tf

    if isinstance(trackable, tf.Variable):
        return [trackable]
    if hasattr(trackable, "variables"):
        return list(trackable.variables)
    return [child for child in tf.train.TrackableView(trackable).descendants() if isinstance(child, tf.Variable)]


def non_finite_variables(objects: dict[str, Any]) -> list[str]:
    """Names of the float variables of ``objects`` (models, optimizers, variables) with a NaN or inf."""
    import tensorflow as tf

    bad = []
    for name, obj in objects.items():
        for variable in variables_of(obj):
            if tf.as_dtype(variable.dtype).is_floating and not bool(tf.reduce_all(tf.math.is_finite(variable))):
                bad.append(f"{name}/{variable.name}")
    return bad


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """Weights of another run, loaded where a run's own logdir holds no checkpoint yet."""

    source: pathlib.Path
    """A run's logdir, its checkpoints/ directory, or one checkpoint (logs/x/checkpoints/ckpt-160)."""
    objects: tuple[str, ...]
    """Which of the agent's checkpoint objects to load (the networks; the optimizer too if asked)."""

    def checkpoint_path(self) -> str:
        if not self.source.is_dir():
            if not pathlib.Path(f"{self.source}.index").exists():
                raise MissingFile(f"init checkpoint: no checkpoint at {self.source} (and no directory)")
            return str(self.source)
        for directory in (self.source / "checkpoints", self.source):
            if latest := latest_checkpoint(directory):
                return latest
        raise MissingFile(f"init checkpoint: no checkpoint under {self.source}")


class Attachment(Protocol):
    """State saved beside the TensorFlow checkpoint in a directory of its own (R2D2's replay)."""

    def save(self, directory: pathlib.Path, progress: Progress | None = None) -> int:
        """Writes it, stamped with the counters of the checkpoint it goes with (``aioseed.server.trajectories.stamps``)."""
        ...

    def restore(self, directory: pathlib.Path, progress: Progress | None = None) -> bool:
        """Reads it, unless it is newer than the checkpoint restored at ``progress``."""
        ...


class Checkpointer:
    """Verbs: ``attach`` more state, ``restore`` the latest (or warm start), ``save`` now. Call them
    from the train thread."""

    def __init__(
        self,
        directory: pathlib.Path,
        objects: dict[str, Any],
        max_to_keep: int = 3,
        warm_start: WarmStart | None = None,
        restored: Callable[[], None] | None = None,
    ) -> None:
        """``restored`` runs once ``restore`` has succeeded or found nothing to restore (a learner writes its
        config.toml then: one whose flags do not fit the checkpoint leaves the logdir as it was)."""
        import tensorflow as tf  # here, so that importing CheckpointRefused loads no TensorFlow

        self._train_steps = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._frames = tf.Variable(0, dtype=tf.int64, trainable=False)
        self._objects = objects
        self._warm_start = warm_start
        self._restored = restored
        self._directory = directory
        self._attachments: dict[str, Attachment] = {}
        self._checkpoint = tf.train.Checkpoint(train_steps=self._train_steps, frames=self._frames, **objects)
        latest_checkpoint(directory)  # the manager reads the state file too, and raises TensorFlow's errors on a damaged one
        self._manager = tf.train.CheckpointManager(self._checkpoint, str(directory), max_to_keep=max_to_keep)

    def attach(self, name: str, attachment: Attachment) -> None:
        """Saves ``attachment`` under checkpoints/NAME with every checkpoint, and restores it with one."""
        self._attachments[name] = attachment

    @property
    def latest(self) -> str | None:
        return self._manager.latest_checkpoint

    def restore(self, path: str | None = None) -> Progress | None:
        """Restores ``path`` (default: the latest checkpoint, if any) and returns its counters; without one, loads
        the warm start's weights, if any (counters stay at zero: a new run)."""
        path = path or self._manager.latest_checkpoint
        if path is None:
            if self._warm_start is not None:
                self._load_warm_start(self._warm_start)
            if self._restored is not None:
                self._restored()
            return None
        check_index(path)
        variables = self._variables()
        kept = [variable.numpy() for variable in variables]
        try:
            self._checkpoint.restore(path).assert_existing_objects_matched()
        except BaseException as exc:
            # All or nothing: TensorFlow has assigned the variables that fit before it met one that does not, or
            # a file that could not be read (serve --watch goes on serving these weights).
            for variable, value in zip(variables, kept):
                variable.assign(value)
            if (unreadable := restore_error(path, exc)) is not None:
                raise unreadable from None
            if not isinstance(exc, (AssertionError, ValueError)):  # TensorFlow's errors for values of another shape or kind
                raise
            first = first_line(exc)
            raise InvalidInput(
                f"checkpoint {path} does not fit this learner: {first} (were the network or env flags different "
                "when it was written? Use another --logdir, or the flags of that run)"
            ) from None
        progress = Progress(int(self._train_steps.numpy()), int(self._frames.numpy()))
        for name, attachment in self._attachments.items():
            attachment.restore(self._directory / name, progress)
        log.info("checkpoint_restored", path=path, train_steps=progress.train_steps, frames=progress.frames)
        if self._restored is not None:
            self._restored()
        return progress

    def _variables(self) -> list[Any]:
        """The variables a restore may assign: the counters', and those of the objects."""
        return [self._train_steps, self._frames, *(v for trackable in self._objects.values() for v in variables_of(trackable))]

    def _load_warm_start(self, warm: WarmStart) -> None:
        import tensorflow as tf

        path = warm.checkpoint_path()
        objects = {name: self._objects[name] for name in warm.objects if name in self._objects}
        try:
            tf.train.Checkpoint(**objects).restore(path).expect_partial().assert_existing_objects_matched()
        except (AssertionError, ValueError, tf.errors.OpError) as exc:
            first = first_line(exc)
            raise InvalidInput(f"init checkpoint {path} does not fit this agent ({', '.join(objects)}): {first}") from None
        log.info("checkpoint_warm_start", path=path, loaded=list(objects))

    def listing(self) -> list[dict[str, Any]]:
        """The checkpoints kept, oldest first: path, train steps, frames and when written (reads their
        counters from disk: call it in a thread)."""
        import tensorflow as tf

        kept = []
        for path in self._manager.checkpoints:
            try:
                frames = int(tf.train.load_variable(path, "frames/.ATTRIBUTES/VARIABLE_VALUE"))
                steps = int(tf.train.load_variable(path, "train_steps/.ATTRIBUTES/VARIABLE_VALUE"))
                written = pathlib.Path(f"{path}.index").stat().st_mtime
            except (tf.errors.OpError, OSError):  # deleted meanwhile (max_to_keep)
                continue
            kept.append({"path": path, "train_steps": steps, "frames": frames, "time": written})
        return kept

    def save(self, progress: Progress) -> str:
        """Raises CheckpointRefused, keeping the checkpoints already written, when any variable is non-finite, and
        CheckpointFailed when writing fails."""
        bad = non_finite_variables(self._objects)
        if bad:
            log.error("checkpoint_refused_nonfinite", variables=bad[:5], count=len(bad), kept=self.latest)
            raise CheckpointRefused(
                f"{len(bad)} variable(s) hold NaN or inf (e.g. {bad[0]}); kept the last good checkpoint {self.latest}"
            )
        import tensorflow as tf

        self._train_steps.assign(progress.train_steps)
        self._frames.assign(progress.frames)
        try:
            path = self._manager.save(checkpoint_number=progress.train_steps)
        except (tf.errors.OpError, OSError) as exc:
            first = first_line(exc)
            log.error("checkpoint_failed", directory=str(self._directory), error=first, kept=self.latest)
            raise CheckpointFailed(f"writing a checkpoint under {self._directory} failed: {first}; kept {self.latest}") from None
        for name, attachment in self._attachments.items():
            try:
                attachment.save(self._directory / name, progress)
            except OSError as exc:  # a full disk: the weights are saved, the previous copy of this is kept
                log.error("checkpoint_attachment_failed", name=name, error=str(exc), checkpoint=path)
        log.info("checkpoint_saved", path=path, train_steps=progress.train_steps, frames=progress.frames)
        return path
