"""A live progress display (rich) for ``aioseed run`` and ``aioseed learner`` when stdout is a terminal:
frames, frames/s, mean return, each stop condition with a bar and an ETA, and the console's URL. Log
lines keep printing above it; the periodic ``progress`` lines, which it shows, are not written."""

from __future__ import annotations

import asyncio
import contextlib
import math
import sys
import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.text import Text

from aioseed import log as logging_setup
from aioseed.compose.config import Display
from aioseed.server.config import StopConfig


class Watched(Protocol):
    """What the display reads from a learner."""

    console_url: str | None

    def metrics(self) -> dict[str, float]: ...


class TerminalProgress:
    """Verbs: ``update`` from the learner's latest snapshot; ``__rich__`` renders it."""

    def __init__(self, learner: Watched, stop: StopConfig, env: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._learner, self._stop, self._env, self._clock = learner, stop, env, clock
        self._started = clock()
        self._first_return: float | None = None
        self._snapshot: dict[str, float] = {}
        self.bars = Progress(
            TextColumn("{task.description:<12}"), BarColumn(bar_width=30), TextColumn("{task.fields[shown]:<22}"),
            TimeRemainingColumn(compact=True, elapsed_when_finished=True), expand=False,
        )
        self._tasks: dict[str, TaskID] = {}
        if stop.after_frames is not None:
            self._tasks["frames"] = self.bars.add_task("frames", total=stop.after_frames, shown="")
        if stop.at_return is not None:
            self._tasks["return"] = self.bars.add_task("mean return", total=1.0, shown="")
        if stop.after_seconds is not None:
            self._tasks["seconds"] = self.bars.add_task("time", total=stop.after_seconds, shown="")

    def update(self) -> None:
        snapshot = self._learner.metrics()
        if not snapshot:
            return
        self._snapshot = snapshot
        frames, mean = snapshot["charts/frames"], snapshot["charts/return"]
        if "frames" in self._tasks:
            self.bars.update(self._tasks["frames"], completed=frames, shown=f"{frames:,.0f} / {self._stop.after_frames:,}")
        if "return" in self._tasks and not math.isnan(mean):
            # From the first mean seen to the target (returns can start below zero, as in Pong).
            self._first_return = mean if self._first_return is None else min(self._first_return, mean)
            target, start = self._stop.at_return, self._first_return
            share = 1.0 if mean >= target else max(0.0, (mean - start) / (target - start)) if target > start else 0.0
            self.bars.update(self._tasks["return"], completed=share, shown=f"{mean:,.1f} / {target:,.1f}")
        if "seconds" in self._tasks:
            elapsed = self._clock() - self._started
            self.bars.update(self._tasks["seconds"], completed=elapsed, shown=f"{elapsed:,.0f} / {self._stop.after_seconds:,.0f} s")

    def __rich__(self) -> RenderableType:
        s = self._snapshot
        header = Text.assemble(("aioseed ", "bold"), self._env, "   console ", (self._learner.console_url or "off", "underline"))
        if not s:
            return Group(header, Text("waiting for the first metrics ..."), self.bars)
        mean = s["charts/return"]
        figures = Text(
            f"frames {s['charts/frames']:,.0f}   frames/s {s['charts/frames_per_s']:,.0f}   "
            f"mean return {'-' if math.isnan(mean) else f'{mean:,.1f}'}   episodes {s['charts/episodes']:,.0f}   "
            f"train steps {s['learner/train_steps']:,.0f}   envs {s.get('actors/envs', 0):,.0f}"
        )
        return Group(header, figures, self.bars)


def wanted(display: Display, stream: object = None) -> bool:
    """Whether to show the live display: ``live``, or ``auto`` with stdout on a terminal."""
    stream = sys.stdout if stream is None else stream
    return display == "live" or (display == "auto" and bool(getattr(stream, "isatty", lambda: False)()))


@contextlib.asynccontextmanager
async def showing(learner: Watched, stop: StopConfig, env: str, display: Display, every_s: float = 0.5) -> AsyncIterator[None]:
    """``async with showing(...):`` the live display while the block runs (nothing unless ``wanted``)."""
    if not wanted(display):
        yield
        return
    progress = TerminalProgress(learner, stop, env)

    async def refresh() -> None:
        while True:
            progress.update()
            await asyncio.sleep(every_s)

    # Log lines print above the display when they go to the same terminal; a file keeps them all.
    on_screen = sys.stderr.isatty()
    if on_screen:
        logging_setup.hide("progress")
    try:
        with Live(progress, console=Console(), refresh_per_second=4, redirect_stderr=on_screen):
            async with asyncio.TaskGroup() as group:
                task = group.create_task(refresh(), name="terminal-progress")
                try:
                    yield
                finally:
                    task.cancel()
            progress.update()  # the figures at the stop stay on the screen
    finally:
        logging_setup.show("progress")
