"""Experiment tracking beside TensorBoard (``--tracking wandb|mlflow``): the same scalars at the same
frames, the resolved ``config.toml`` (and its values as the run's config or parameters), the evaluation
actor's clips as they appear in LOGDIR/videos, and checkpoints as artifacts.

Every call blocks on the backend's client: the learner makes them in its train thread (scalars, as
TensorBoard's) or in a worker thread (checkpoints, the close), never on the event loop.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
from collections.abc import Mapping
from typing import Any, Literal, Protocol

import structlog

log = structlog.get_logger()

TrackingName = Literal["none", "wandb", "mlflow"]
CLIP = re.compile(r"eval-\d+-\d+-\d+\.mp4")
"""A finished clip of the evaluation actor (``aioseed.clients.clips``: partial ones have another name)."""


@dataclasses.dataclass(frozen=True)
class TrackerConfig:
    """Where --tracking sends the run (TensorBoard is written either way)."""

    project: str = "aioseed"
    """W&B project, or MLflow experiment."""
    name: str | None = None
    """Run name (default: the logdir's name)."""
    uri: str | None = None
    """MLflow tracking URI (default: MLFLOW_TRACKING_URI if set, else sqlite:///LOGDIR/mlflow.db with the
    artifacts in LOGDIR/mlartifacts). W&B
    reads its own settings (WANDB_MODE=offline keeps a run on disk, under LOGDIR/wandb)."""
    checkpoints: Literal["none", "last", "all"] = "last"
    """Checkpoints sent as artifacts: the one written at shutdown, every one, or none."""


class Tracker(Protocol):
    def scalars(self, snapshot: Mapping[str, float], frames: int) -> None: ...

    def clip(self, path: pathlib.Path, frames: int) -> None: ...

    def checkpoint(self, files: list[pathlib.Path], name: str, frames: int) -> None: ...

    def close(self, ok: bool) -> None: ...


def open_tracker(
    tracking: TrackingName, config: TrackerConfig, logdir: pathlib.Path, document: Mapping[str, Any]
) -> Tracker | None:
    """The backend's run, with ``document`` (the resolved config) and LOGDIR/config.toml sent."""
    if tracking == "none":
        return None
    name = config.name or logdir.resolve().name
    if tracking == "wandb":
        from aioseed.server.reporting.tracking_wandb import WandbTracker

        tracker: Tracker = WandbTracker(config.project, name, logdir, document)
    else:
        from aioseed.server.reporting.tracking_mlflow import MlflowTracker

        uri = config.uri or os.environ.get("MLFLOW_TRACKING_URI") or None
        if uri is None:  # a store of this run's own, its artifacts beside it (not in the working directory)
            uri, artifacts = f"sqlite:///{(logdir / 'mlflow.db').resolve()}", (logdir / "mlartifacts").resolve().as_uri()
            tracker = MlflowTracker(config.project, name, uri, logdir, document, artifacts)
        else:
            tracker = MlflowTracker(config.project, name, uri, logdir, document)
    log.info("tracking_started", backend=tracking, project=config.project, run=name)
    return tracker


def checkpoint_files(path: str) -> list[pathlib.Path]:
    """A checkpoint's files (``ckpt-N.index``, ``ckpt-N.data-*``), the directory's ``checkpoint`` index,
    and its attachments (``replay/``)."""
    prefix = pathlib.Path(path)
    files = sorted(prefix.parent.glob(prefix.name + ".*"))
    index = prefix.parent / "checkpoint"
    return files + ([index] if index.exists() else [])


class Sender:
    """What the learner calls: the scalars and any new clips on each summary, and checkpoints by the
    ``checkpoints`` policy; each failure of the backend is logged, never raised into the learner."""

    def __init__(self, tracker: Tracker, clips: pathlib.Path, checkpoints: Literal["none", "last", "all"]) -> None:
        self._tracker = tracker
        self._clips = clips
        self._sent_clips: set[str] = set()
        self.checkpoints = checkpoints

    def summary(self, snapshot: Mapping[str, float], frames: int) -> None:
        self._guard("scalars", lambda: self._tracker.scalars(snapshot, frames))
        if self._clips.is_dir():
            for path in sorted(self._clips.iterdir()):
                if CLIP.fullmatch(path.name) and path.name not in self._sent_clips:
                    self._sent_clips.add(path.name)
                    self._guard("clip", lambda: self._tracker.clip(path, frames))

    def checkpoint(self, path: str, frames: int, final: bool) -> None:
        if self.checkpoints == "all" or (self.checkpoints == "last" and final):
            self._guard("checkpoint", lambda: self._tracker.checkpoint(checkpoint_files(path), pathlib.Path(path).name, frames))

    def close(self, ok: bool) -> None:
        self._guard("close", lambda: self._tracker.close(ok))

    def _guard(self, what: str, send: Any) -> None:
        try:
            send()
        except Exception as exc:  # a tracking service's outage must not stop training
            log.error("tracking_failed", what=what, error=f"{type(exc).__name__}: {exc}")
