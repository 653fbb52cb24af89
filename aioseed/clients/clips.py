"""Evaluation clips: every ``every``-th episode of an evaluation actor's first env, as an MP4 in a
directory (``aioseed run`` uses LOGDIR/videos, which the learner's console shows)."""

from __future__ import annotations

import concurrent.futures
import os
import pathlib
import time
from collections.abc import Callable

import numpy as np
import structlog

from aioseed.envs.video import Clip
from aioseed.types import FINAL

log = structlog.get_logger()

SUFFIX = ".mp4"


class ClipRecorder:
    """Verbs: ``after_step`` with env 0's flags and its frame source (call it once after the reset too),
    ``close``. A clip holds an episode's first frame, then one per step. It is written under a
    ``.partial`` name of this process and renamed ``eval-<time>-<pid>-<episode>.mp4`` when its episode
    ends; finishing it (ffmpeg encodes the rest) happens in a thread, off the actor's event loop. The
    ``keep`` newest clips in the directory are kept."""

    def __init__(self, directory: pathlib.Path, every: int, keep: int = 5, fps: int = 30) -> None:
        if every < 1 or keep < 1:
            raise ValueError("every and keep must be >= 1")
        self.directory, self.every, self.keep, self.fps = directory, every, keep, fps
        self.episodes = 0
        """Episodes of env 0 that ended so far."""
        self.written: list[pathlib.Path] = []
        self._finishing = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="clips")
        self._clip: Clip | None = self._start()  # the first episode is recorded

    def after_step(self, flags: int, render: Callable[[], np.ndarray]) -> None:
        """``flags``: env 0's row flags after the step; ``render``: returns its frame now."""
        if self._clip is not None:
            self._clip.add(render())
        if flags & FINAL:
            self.episodes += 1
            if self._clip is not None:
                self._finishing.submit(self._finish, self._clip, self.episodes).add_done_callback(_report)
            self._clip = self._start() if self.episodes % self.every == 0 else None

    def close(self) -> None:
        """Waits for the clips being finished; an episode cut short is not a clip."""
        if self._clip is not None:
            self._clip.close()
            self._clip.path.unlink(missing_ok=True)
            self._clip = None
        self._finishing.shutdown(wait=True)

    def _start(self) -> Clip:
        return Clip(self.directory / f"recording-{os.getpid()}-{self.episodes}.partial{SUFFIX}", self.fps)

    def _finish(self, clip: Clip, episode: int) -> None:
        clip.close()
        final = self.directory / f"eval-{time.time():.0f}-{os.getpid()}-{episode:06d}{SUFFIX}"
        clip.path.rename(final)
        self.written.append(final)
        log.info("clip_written", path=str(final), frames=clip.frames)
        for old in sorted(self.directory.glob(f"eval-*{SUFFIX}"))[: -self.keep]:
            old.unlink(missing_ok=True)


def _report(finished: concurrent.futures.Future) -> None:
    if finished.exception() is not None:
        log.error("clip_failed", error=repr(finished.exception()))
