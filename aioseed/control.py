"""The contract between a learner and what steers it: snapshots to read, staged commands to write.

The learner (``aioseed.server.learner.Learner``) implements ``Control``; the console
(``aioseed.console``) depends on this module only, never on the server.
"""

from __future__ import annotations

import pathlib
from typing import Any, Protocol


class CommandRefused(RuntimeError):
    """A command the learner will not carry out in its current state (the console answers 409)."""


class CommandFailed(RuntimeError):
    """A command the learner tried and could not carry out for a reason outside the request, e.g. a full disk
    (the console answers 500; the learner carries on)."""


class InvalidSetting(ValueError):
    """A setting the learner does not take: an unknown name, or a value of the wrong type or out of range (the
    console answers 400 and names ``field``)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class Control(Protocol):
    metrics_every_s: float
    """Interval of metric snapshots (the feed pushes each new one)."""

    def metrics(self) -> dict[str, float]:
        """The latest metrics snapshot (empty before the first)."""
        ...

    def series(self, since: float = 0.0) -> list[dict[str, float]]:
        """Snapshots taken after ``since`` (time.time()), oldest first."""
        ...

    def actors(self) -> list[dict[str, Any]]:
        """The connected actor streams: stream id, actor, address, envs, steps, rates and times."""
        ...

    async def run_info(self) -> dict[str, Any]:
        """What the run is: env, agent, network, devices, version, logdir, start time, key
        hyperparameters, and the checkpoints kept (path, train steps, frames, time)."""
        ...

    def clip_directory(self) -> pathlib.Path | None:
        """Where evaluation clips land (LOGDIR/videos), or None without a logdir."""
        ...

    def settings(self) -> dict[str, Any]:
        """Settings in effect and those staged for the next batch."""
        ...

    def configure_batcher(self, max_batch_size: int | None = None, deadline_ms: float | None = None) -> Any:
        """Stages batcher settings for the next batch; a manual change turns the auto-tuner off."""
        ...

    def set_batching_auto(self, enabled: bool, why: str = "requested") -> None:
        """Turns the batching auto-tuner on or off."""
        ...

    async def set_learning_rate(self, value: float, who: str = "console") -> None:
        """Applies between train steps, recorded (``who``: who asked). Raises ``CommandFailed`` when the record
        cannot be written."""
        ...

    async def change_settings(self, changes: dict[str, Any], who: str) -> dict[str, Any]:
        """Live training settings, applied between train steps and recorded: the train step they apply from, the
        settings changed, and the values in effect. Raises ``InvalidSetting`` or ``CommandRefused``."""
        ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    async def checkpoint_now(self) -> str | None:
        """A checkpoint between train steps: its path (None without a logdir). Raises
        ``CommandRefused`` when the weights are non-finite."""
        ...

    def disconnect(self, stream_id: int) -> None:
        """Ends one stream; KeyError if there is none with that id."""
        ...
