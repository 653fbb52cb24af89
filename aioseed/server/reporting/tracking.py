"""Experiment tracking beside TensorBoard (``--tracking wandb|mlflow``): the same scalars at the same
frames, the resolved ``config.toml`` (and its values as the run's config or parameters), the evaluation
actor's clips as they appear in LOGDIR/videos, and checkpoints as artifacts.

The backend's client blocks, so ``Sender`` queues every call for a thread of its own: neither the event
loop nor the train thread waits on a tracking service.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import pathlib
import re
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol

import structlog

if TYPE_CHECKING:
    from aioseed.server.reporting.tracking_mlflow import MlflowTracker
    from aioseed.server.reporting.tracking_wandb import WandbTracker

log = structlog.get_logger()

TrackingName = Literal["none", "wandb", "mlflow"]
MAX_PENDING = 256
"""Calls queued for the tracking thread before new ones are dropped."""
CLOSE_TIMEOUT_S = 300.0
"""How long shutdown waits for the queued calls and the run's end."""
CLIP = re.compile(r"eval-\d+-\d+-\d+\.mp4")
"""A finished clip of the evaluation actor (``aioseed.clients.clips``: partial ones have another name)."""
RUN_IDS = "tracking.json"
"""LOGDIR/tracking.json: the tracked run's id by backend, so that a run resumed from its checkpoint carries it on."""


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
    """The backend's run, with ``document`` (the resolved config) and LOGDIR/config.toml sent; None (logged)
    when the backend cannot open one: a tracking service's outage does not stop training."""
    if tracking == "none":
        return None
    try:
        return _open(tracking, config, logdir, document)
    except ImportError as exc:
        raise RuntimeError(f"--tracking {tracking} needs its client: pip install 'aioseed[tracking]' ({exc})") from None
    except Exception as exc:
        log.error("tracking_failed", what="open", backend=tracking, error=f"{type(exc).__name__}: {exc}")
        return None


def _open(tracking: TrackingName, config: TrackerConfig, logdir: pathlib.Path, document: Mapping[str, Any]) -> Tracker:
    name = config.name or logdir.resolve().name
    resumed = resumed_run_id(logdir, tracking)
    tracker: WandbTracker | MlflowTracker
    if tracking == "wandb":
        from aioseed.server.reporting.tracking_wandb import WandbTracker

        tracker = WandbTracker(project=config.project, name=name, logdir=logdir, document=document, run_id=resumed)
    else:
        from aioseed.server.reporting.tracking_mlflow import MlflowTracker

        uri = config.uri or os.environ.get("MLFLOW_TRACKING_URI") or None
        artifacts = None
        if uri is None:  # a store of this run's own, its artifacts beside it (not in the working directory)
            uri, artifacts = f"sqlite:///{(logdir / 'mlflow.db').resolve()}", (logdir / "mlartifacts").resolve().as_uri()
        tracker = MlflowTracker(
            experiment=config.project, name=name, uri=uri, logdir=logdir, document=document, artifacts=artifacts, run_id=resumed
        )
    try:
        (logdir / RUN_IDS).write_text(json.dumps({tracking: tracker.run_id}))
    except OSError as exc:  # the run is tracked all the same; a resume opens a new tracked run
        log.warning("tracking_id_not_kept", path=str(logdir / RUN_IDS), error=str(exc))
    log.info("tracking_started", backend=tracking, project=config.project, run=name, run_id=tracker.run_id, resumed=tracker.run_id == resumed)
    return tracker


def resumed_run_id(logdir: pathlib.Path, tracking: TrackingName) -> str | None:
    """The tracked run a run resumed from a checkpoint carries on: the one LOGDIR/tracking.json names for this
    backend. None where the logdir holds no checkpoint (a fresh start opens a new tracked run) or no such id."""
    if not (logdir / "checkpoints" / "checkpoint").is_file():
        return None
    try:
        ids = json.loads((logdir / RUN_IDS).read_text())
    except (OSError, ValueError):
        return None
    run_id = ids.get(tracking) if isinstance(ids, dict) else None
    return run_id if isinstance(run_id, str) else None


def checkpoint_files(path: str) -> list[pathlib.Path]:
    """A checkpoint's files (``ckpt-N.index``, ``ckpt-N.data-*``) and the directory's ``checkpoint`` index
    (not its attachments, such as a replay)."""
    prefix = pathlib.Path(path)
    files = sorted(prefix.parent.glob(prefix.name + ".*"))
    index = prefix.parent / "checkpoint"
    return files + ([index] if index.exists() else [])


class Sender:
    """What the learner calls: the scalars and any new clips on each summary, and checkpoints by the
    ``checkpoints`` policy. Each call is queued for one thread of its own, in order, so a slow or
    unreachable service never holds up the train thread; past ``MAX_PENDING`` queued calls new summaries
    are dropped (and counted in the log), never a checkpoint, and a failure of the backend is logged,
    never raised."""

    def __init__(self, tracker: Tracker, clips: pathlib.Path, checkpoints: Literal["none", "last", "all"]) -> None:
        self._tracker = tracker
        self._clips = clips
        self._sent_clips: set[str] = set()
        self.checkpoints = checkpoints
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tracking")
        self._lock = threading.Lock()
        self._pending = 0
        self.dropped = 0
        self._summaries = 0
        """Summaries submitted: once closing, only the newest of those still queued is sent."""
        self._closing = False

    def summary(self, snapshot: Mapping[str, float], frames: int) -> None:
        snapshot, number = dict(snapshot), self._summaries + 1

        def send() -> None:
            if self._closing and number != self._summaries:  # superseded: the checkpoint and the close go first
                return
            self._send_summary(snapshot, frames)

        if self._submit("scalars", send):
            self._summaries = number

    def checkpoint(self, path: str, frames: int, final: bool) -> None:
        if self.checkpoints == "all" or (self.checkpoints == "last" and final):
            files = checkpoint_files(path)  # now: max_to_keep may delete them before the upload
            self._submit("checkpoint", lambda: self._tracker.checkpoint(files, pathlib.Path(path).name, frames), droppable=False)

    def close(self, ok: bool, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Sends what is queued (of the summaries, the newest), then ends the run; gives up waiting after ``timeout_s``."""
        self._closing = True
        future = self._executor.submit(self._guard, "close", lambda: self._tracker.close(ok))
        try:
            future.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            log.error("tracking_failed", what="close", error=f"still sending after {timeout_s:g} s; left behind")
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self.dropped:
            log.warning("tracking_dropped", calls=self.dropped)

    def _send_summary(self, snapshot: Mapping[str, float], frames: int) -> None:
        self._tracker.scalars(snapshot, frames)
        if self._clips.is_dir():
            for path in sorted(self._clips.iterdir()):
                if CLIP.fullmatch(path.name) and path.name not in self._sent_clips:
                    self._sent_clips.add(path.name)
                    try:
                        self._tracker.clip(path, frames)
                    except FileNotFoundError:  # the recorder keeps only its newest clips: this one went first
                        log.info("tracking_clip_gone", path=str(path))
                    except Exception as exc:
                        log.error("tracking_failed", what="clip", error=f"{type(exc).__name__}: {exc}")

    def _submit(self, what: str, send: Callable[[], object], droppable: bool = True) -> bool:
        """Whether ``send`` was queued. ``droppable``: a summary, which the next one supersedes; a checkpoint (one
        per interval) is not."""
        with self._lock:
            if droppable and self._pending >= MAX_PENDING:
                self.dropped += 1
                return False
            self._pending += 1

        def run() -> None:
            try:
                self._guard(what, send)
            finally:
                with self._lock:
                    self._pending -= 1

        self._executor.submit(run)
        return True

    def _guard(self, what: str, send: Callable[[], object]) -> None:
        try:
            send()
        except Exception as exc:  # a tracking service's outage must not stop training
            log.error("tracking_failed", what=what, error=f"{type(exc).__name__}: {exc}")
