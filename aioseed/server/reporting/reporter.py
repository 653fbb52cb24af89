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


def progress_fields(snapshot: Snapshot, fps: float, mean_batch: float | None = None) -> dict[str, float | int]:
    """The progress log line's fields, read from one snapshot; ``mean_batch`` (the mean inference batch over
    the whole logging interval) replaces the snapshot's own, which covers one metrics interval only."""
    batch = snapshot["batcher/batch_size"] if mean_batch is None else mean_batch
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
    hands the snapshot to ``write`` (TensorBoard)."""

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
        self._batches, self._batched_rows = 0.0, 0.0  # inference batches and their rows since the last line

    async def run(self) -> None:
        self._logged_at, self._logged_frames = time.monotonic(), self._frames()
        while True:
            await asyncio.sleep(self._every_s)
            snapshot = self._sample()
            self._add(snapshot)
            if self._observe is not None:
                self._observe(snapshot)
            if time.monotonic() - self._logged_at >= self._log_every_s:
                await self._report(snapshot)

    async def final(self) -> None:
        """The figures at the stop: a last snapshot, progress line and summary (the periodic ones can
        miss everything since the last interval, such as the training that reached the target)."""
        snapshot = self._sample()
        self._add(snapshot)
        await self._report(snapshot)

    def _add(self, snapshot: Snapshot) -> None:
        self._history.append(snapshot)
        batches = snapshot.get("batcher/batches", 0.0)
        if batches > 0:  # a window with no batch (training in synchronous mode, say) reads NaN, not zero
            self._batches += batches
            self._batched_rows += batches * snapshot["batcher/batch_size"]

    async def _report(self, snapshot: Snapshot) -> None:
        now, frames = time.monotonic(), self._frames()
        fps = (frames - self._logged_frames) / max(now - self._logged_at, 1e-9)
        mean_batch = self._batched_rows / self._batches if self._batches else math.nan
        log.info("progress", **progress_fields(snapshot, fps, mean_batch))
        self._logged_at, self._logged_frames = now, frames
        self._batches, self._batched_rows = 0.0, 0.0
        if self._write is not None:
            await self._write(snapshot)
