"""Progress reporting: metric snapshots into the history, progress log lines and TensorBoard summaries."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable

import structlog

from aioseed.server.reporting.stats import History

log = structlog.get_logger()

Snapshot = dict[str, float]


def progress_fields(snapshot: Snapshot, fps: float, batch: float | None = None) -> dict[str, float | int]:
    """The progress log line's fields, read from one snapshot; ``batch`` (the mean inference batch over the
    whole logging interval) replaces the snapshot's own, which covers one metrics interval only."""
    batch = snapshot["batcher/batch_size"] if batch is None else batch
    fields: dict[str, float | int] = {
        "frames": int(snapshot["charts/frames"]),
        "fps": round(fps),
        "mean_return": round(snapshot["charts/return"], 1),
        "episodes": int(snapshot["charts/episodes"]),
        "train_steps": int(snapshot["learner/train_steps"]),
        "loss": round(snapshot.get("losses/total", float("nan")), 4),
        "batch": round(batch, 1),
        "streams": int(snapshot.get("actors/streams", 0)),
        "lag": round(snapshot["learner/policy_lag"], 2),
    }
    for name, key, digits in SHORT_DIAGNOSTICS:
        value = snapshot.get(key, math.nan)
        if value == value:  # not NaN: the figure is reported (evaluation envs, PPO-style reuse, ...)
            fields[name] = round(value, digits) if digits else int(value)
    return fields


def mean_batch(snapshots: list[Snapshot]) -> float:
    """The mean inference batch over ``snapshots``, each weighted by its batches; NaN when none closed (in
    synchronous mode no batch closes while training, so a single metrics window often reads NaN)."""
    batched = [p for p in snapshots if p.get("batcher/batches", 0.0) > 0]
    batches = sum(p["batcher/batches"] for p in batched)
    return sum(p["batcher/batches"] * p["batcher/batch_size"] for p in batched) / batches if batches else math.nan


SHORT_DIAGNOSTICS = (
    ("eval_return", "charts/eval_return", 1),
    ("return_right", "charts/return_right", 1),
    ("opponent", "selfplay/opponent_version", 0),
    ("serving", "serve/checkpoint", 0),
    ("kl", "policy/kl_behaviour", 4),
    ("clip", "losses/clip_fraction", 3),
    ("ev", "policy/explained_variance", 2),
    ("entropy", "policy/entropy", 2),
)
"""(name, metric, rounding) of figures the progress line shows when they are reported."""


class Reporter:
    """Verbs: ``run`` (a task), ``final``. Every ``every_s`` it takes a snapshot into ``history`` and
    hands it to ``observe`` (the batching tuner); every ``log_every_s`` it logs a progress line and
    hands the snapshot to ``write`` (TensorBoard). A write waits for the train thread (between steps), so
    it runs beside the sampling: a long step or checkpoint holds up the writes, never the snapshots the
    console and the tuner read; writes due meanwhile are left for the newest."""

    def __init__(
        self,
        sample: Callable[[], Snapshot],
        frames: Callable[[], int],
        history: History,
        every_s: float,
        log_every_s: float,
        write: Callable[[Snapshot], Awaitable[object]] | None = None,
        observe: Callable[[Snapshot], None] | None = None,
    ) -> None:
        self._sample = sample
        self._frames = frames
        self._history = history
        self._every_s = every_s
        self._log_every_s = log_every_s
        self._write = write
        self._observe = observe
        self._logged_at, self._logged_frames = time.monotonic(), frames()
        self._logged_time = 0.0  # the "time" of the snapshot the last line was logged from
        self._unwritten: Snapshot | None = None
        self._at_stop: Snapshot | None = None
        self._due = asyncio.Event()

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(self._sampling(), name="reporter-sampling")
            if self._write is not None:
                group.create_task(self._writing(), name="reporter-writing")

    async def _sampling(self) -> None:
        self._logged_at, self._logged_frames = time.monotonic(), self._frames()
        while True:
            await asyncio.sleep(self._every_s)
            snapshot = self._sample()
            self._history.append(snapshot)
            if self._observe is not None:
                self._observe(snapshot)
            if time.monotonic() - self._logged_at >= self._log_every_s:
                self._log(snapshot)
                self._unwritten = snapshot
                self._due.set()

    async def _writing(self) -> None:
        assert self._write is not None
        while True:
            await self._due.wait()
            self._due.clear()
            snapshot, self._unwritten = self._unwritten, None
            if snapshot is not None:
                await self._write(snapshot)

    def mark_stop(self) -> None:
        """Takes the snapshot the stop acted on, at the stop itself: the periodic ones can miss
        everything since the last interval (such as the training that reached the target), and episodes
        that end during the drain move the mean return after it."""
        self._at_stop = self._sample()
        self._history.append(self._at_stop)

    async def final(self) -> None:
        """After the drain: the stop's summary, then a last snapshot, progress line and summary with
        the frames the drain added."""
        snapshot = self._sample()
        self._history.append(snapshot)
        self._log(snapshot)
        self._unwritten = None
        if self._write is not None:
            if self._at_stop is not None:
                await self._write(self._at_stop)
            await self._write(snapshot)

    def _log(self, snapshot: Snapshot) -> None:
        now, frames = time.monotonic(), self._frames()
        fps = (frames - self._logged_frames) / max(now - self._logged_at, 1e-9)
        batch = mean_batch(self._history.since(self._logged_time))  # the windows since the last line
        log.info("progress", **progress_fields(snapshot, fps, batch))
        self._logged_at, self._logged_frames, self._logged_time = now, frames, snapshot["time"]
