"""Progress reporting: metric snapshots into the history, progress log lines and TensorBoard summaries."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import structlog

from aioseed.server.stats import History

log = structlog.get_logger()

Snapshot = dict[str, float]


def progress_fields(snapshot: Snapshot, fps: float) -> dict[str, float | int]:
    """The progress log line's fields, all read from one snapshot."""
    fields: dict[str, float | int] = {
        "frames": int(snapshot["charts/frames"]),
        "fps": round(fps),
        "mean_return": round(snapshot["charts/return"], 1),
        "episodes": int(snapshot["charts/episodes"]),
        "train_steps": int(snapshot["learner/train_steps"]),
        "loss": round(snapshot.get("losses/total", float("nan")), 4),
        "batch": round(snapshot["batcher/batch_size"], 1),
        "streams": int(snapshot.get("actors/streams", 0)),
        "lag": round(snapshot["learner/policy_lag"], 2),
    }
    eval_return = snapshot["charts/eval_return"]
    if eval_return == eval_return:  # not NaN: evaluation envs have finished episodes
        fields["eval_return"] = round(eval_return, 1)
    return fields


class Reporter:
    """Verb: ``run`` (a task). Every ``every_s`` it takes a snapshot into ``history``; every
    ``log_every_s`` it logs a progress line and hands the snapshot to ``write`` (TensorBoard)."""

    def __init__(
        self,
        sample: Callable[[], Snapshot],
        frames: Callable[[], int],
        history: History,
        every_s: float,
        log_every_s: float,
        write: Callable[[Snapshot], Awaitable[object]] | None = None,
    ) -> None:
        self._sample = sample
        self._frames = frames
        self._history = history
        self._every_s = every_s
        self._log_every_s = log_every_s
        self._write = write

    async def run(self) -> None:
        logged_at, logged_frames = time.monotonic(), self._frames()
        while True:
            await asyncio.sleep(self._every_s)
            snapshot = self._sample()
            self._history.append(snapshot)
            now = time.monotonic()
            if now - logged_at < self._log_every_s:
                continue
            frames = self._frames()
            log.info("progress", **progress_fields(snapshot, (frames - logged_frames) / (now - logged_at)))
            logged_at, logged_frames = now, frames
            if self._write is not None:
                await self._write(snapshot)
