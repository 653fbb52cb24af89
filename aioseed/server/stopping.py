"""When the learner stops: a request, or a stop condition on frames, mean return or time."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable

import structlog

from aioseed.server.reporting.stats import Stats

log = structlog.get_logger()

TICK_S = 0.05
"""How often the timer looks for the first frames and its deadline."""


class Stopping:
    """Verbs: ``request`` a stop, ``check`` the conditions, ``timer`` (a task), ``wait``.

    The first stop wins; its reason and the counters at that moment are kept (the
    drain that follows still moves the counters).
    """

    def __init__(
        self,
        stats: Stats,
        at_return: float | None = None,
        after_frames: int | None = None,
        after_seconds: float | None = None,
        after_training_seconds: float | None = None,
    ) -> None:
        """``at_return``: stop once the mean return over a full window of episodes reaches it; ``after_seconds`` of
        serving; ``after_training_seconds`` from the first frames."""
        self._stats = stats
        self._at_return = at_return
        self._after_frames = after_frames
        self._after_seconds = after_seconds
        self._after_training_seconds = after_training_seconds
        self._event = asyncio.Event()
        self.reason: str | None = None
        """Why the learner stopped: "requested", "frames", "return" or "time"."""
        self.time: float | None = None
        """Wall-clock time (time.time()) of the stop."""
        self.frames: int | None = None
        """Frames at the stop (before the drain)."""
        self.mean_return = math.nan
        """Mean return at the stop."""
        self.on_request: Callable[[], None] | None = None
        """Called once, in the same step as the first ``request`` (the learner records the figures the stop acted on)."""

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self, reason: str = "requested") -> None:
        if self._event.is_set():
            return
        self.reason, self.time = reason, time.time()
        self.frames, self.mean_return = self._stats.frames, self._stats.mean_return()
        if self.on_request is not None:
            self.on_request()
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()

    def check(self, episodes_ended: bool) -> None:
        """After each batch: stops on the frame budget, or on the target return when episodes ended
        (only then can the mean return move, so most batches skip averaging the window)."""
        stats = self._stats
        if self._event.is_set():
            return
        if self._after_frames is not None and stats.frames >= self._after_frames:
            log.info("stop_condition", reason="frames", frames=stats.frames)
            self.request("frames")
        elif episodes_ended and self._at_return is not None and stats.full_window() and stats.mean_return() >= self._at_return:
            log.info(
                "stop_condition",
                reason="return",
                frames=stats.frames,
                mean_return=round(stats.mean_return(), 2),
                seconds=round(time.monotonic() - stats.started, 2),
            )
            self.request("return")

    async def timer(self) -> None:
        """Stops after ``after_seconds`` of serving or ``after_training_seconds`` from the first frames, whichever
        comes first (returns at once without either)."""
        if self._after_seconds is None and self._after_training_seconds is None:
            return
        serving, restored = time.monotonic(), self._stats.frames  # a resumed run's frames count from its checkpoint's
        due = math.inf if self._after_seconds is None else serving + self._after_seconds
        training = self._after_training_seconds
        while not self._event.is_set():
            now = time.monotonic()
            if training is not None and self._stats.frames > restored:  # this session's first frames, seen within TICK_S
                due, training = min(due, now + training), None
            if now >= due:
                log.info("stop_condition", reason="time", frames=self._stats.frames, serving_s=round(now - serving, 2))
                self.request("time")
                return
            await asyncio.sleep(due - now if training is None else min(TICK_S, max(due - now, 0.0)))
