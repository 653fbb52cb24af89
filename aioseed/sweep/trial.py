"""One trial: an ``aioseed run`` process on the trial's config, its curve read back while it trains
and handed to the pruner, stopped in order (SIGTERM: checkpoint, then exit) when the pruner says so."""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import pathlib
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import structlog
import tomli_w

from aioseed.results.curves import CurveTail, Point
from aioseed.results.kept import TRIAL

if TYPE_CHECKING:
    from aioseed.server.config import StopConfig

log = structlog.get_logger()

POLL_S = 2.0
"""How often the trial's curve is read while it trains."""
STOP_WAIT_S = 120.0
"""How long a stopped run may take to checkpoint and exit before it is killed."""


class TrialFailed(RuntimeError):
    """The run exited with an error, left no curve, or stopped short of its stop conditions."""


class Stopped(Exception):
    """The sweep was told to stop (SIGINT, SIGTERM): the trial's run stopped in order (checkpointed, exited); the
    trial fails, and the sweep's next invocation queues it again and the run resumes."""


class Pruned(Exception):
    """The pruner stopped the run at ``frames``."""

    def __init__(self, frames: int) -> None:
        super().__init__(f"pruned at {frames} frames")
        self.frames = frames


def command(preset: str, config: pathlib.Path) -> list[str]:
    return [sys.executable, "-m", "aioseed", "run", "--preset", preset, "--config", str(config)]


def write_config(logdir: pathlib.Path, table: dict) -> pathlib.Path:
    """The trial's ``aioseed run --config`` file, LOGDIR/trial.toml."""
    logdir.mkdir(parents=True, exist_ok=True)
    path = logdir / TRIAL
    path.write_text(tomli_w.dumps({"command": "run", **table}))
    return path


@contextlib.contextmanager
def claim(logdir: pathlib.Path) -> Iterator[bool]:
    """Whether this worker holds LOGDIR, for as long as the block runs: an exclusive ``flock`` on LOGDIR/.claim, so
    that two workers on one machine (threads, or sweeps) never train one logdir at once. The kernel lets go when
    the file is closed or the process dies; the run's process does not inherit it."""
    logdir.mkdir(parents=True, exist_ok=True)
    with open(logdir / ".claim", "ab") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True


def value_at(points: Sequence[Point], frames: int) -> float | None:
    """The curve's mean return at ``frames``: its last point at or before them (None before its first point: no
    episode had ended, and a later point's value would be reported as the earlier step's)."""
    before = [p for p in points if p.frames <= frames]
    return before[-1].mean_return if before else None


def run_trial(
    argv: list[str], logdir: pathlib.Path, every: int, should_stop: Callable[[float, int], bool], window: int = 100,
    stopping: threading.Event | None = None, stop: StopConfig | None = None,
) -> float:
    """Runs ``argv`` (an ``aioseed run``), reporting the curve's mean return (over ``window`` episodes, the run's
    return window) at each multiple of ``every`` frames to ``should_stop(value, frames)``; raises ``Pruned`` once
    it says stop, and ``Stopped`` once ``stopping`` is set. Returns the mean return at the curve's end; raises
    ``TrialFailed`` where that end falls short of the run's ``stop`` conditions (a run stopped from outside exits
    in order, with status 0, and its part of a curve is no result). The run's output goes to LOGDIR/trial.log."""
    stopping = stopping or threading.Event()
    with open(logdir / "trial.log", "ab") as output:
        parent = os.getpid()
        # A session of its own: a Ctrl-C at the terminal reaches the sweep only, which stops the run with one
        # SIGTERM (a second signal makes a run exit at once, without its final checkpoint).
        process = subprocess.Popen(
            argv, stdout=output, stderr=subprocess.STDOUT, preexec_fn=lambda: _die_with_parent(parent), start_new_session=True
        )
        tail = CurveTail(logdir / "tensorboard", window)  # each poll parses only the events written since the last
        try:
            step = every
            while True:
                finished = process.poll() is not None
                points = tail.points()
                while points and points[-1].frames >= step:
                    value = value_at(points, step)
                    if value is not None and should_stop(value, step):
                        stop_run(process)
                        raise Pruned(step)
                    step += every
                if finished:
                    break
                if stopping.wait(POLL_S):
                    stop_run(process)
                    raise Stopped(f"the sweep stopped; the run in {logdir} checkpointed and exited")
        finally:
            if process.poll() is None:
                stop_run(process)
    if process.returncode != 0:
        raise TrialFailed(f"aioseed run exited with status {process.returncode}: see {logdir / 'trial.log'}")
    points = tail.points()
    if not points:
        raise TrialFailed(f"the run left no curve under {logdir / 'tensorboard'}: see {logdir / 'trial.log'}")
    if stop is not None and (short := short_of_stop(points, stop)) is not None:
        raise TrialFailed(f"the run exited 0, but {short}: was it stopped from outside? The sweep resumes it from its checkpoint")
    return points[-1].mean_return


def short_of_stop(points: Sequence[Point], stop: StopConfig) -> str | None:
    """How a curve falls short of the stop conditions its run had (None: it reached one, or the run stopped on
    time, which a curve does not show, or had no condition to reach)."""
    if stop.after_seconds is not None or stop.after_training_seconds is not None or (stop.after_frames, stop.at_return) == (None, None):
        return None
    last = points[-1]
    if stop.after_frames is not None and last.frames >= stop.after_frames:
        return None
    # The stop acted on the first mean at the target; episodes that end in the drain after it may pull the last below.
    if stop.at_return is not None and any(point.mean_return >= stop.at_return for point in points):
        return None
    wanted = " or ".join(
        f"{name} {value:g}" for name, value in (("after_frames", stop.after_frames), ("at_return", stop.at_return)) if value is not None
    )
    return f"its curve ends at {last.frames} frames with a mean return of {last.mean_return:.4g}, short of its stop ({wanted})"


def stop_run(process: subprocess.Popen) -> None:
    """SIGTERM (the run stops accepting, drains, checkpoints and exits), then SIGKILL if it hangs."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        log.warning("trial_killed", pid=process.pid, waited_s=STOP_WAIT_S)
        process.kill()
        process.wait()


_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None
"""Resolved here, not in the forked child (which may only make the call)."""


def _die_with_parent(parent: int = os.getpid()) -> None:
    """In the child, before exec: Linux sends it SIGTERM if the sweep dies, so that a killed sweep leaves
    no run training on in a logdir its restart will resume; a sweep that died before the call ends it."""
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)
