"""The episode window saved with each checkpoint. A resumed run's mean return (the progress line, the console,
``stop.at_return``, the curves) goes on from the episodes before its restart: it started again from its first
few, so resumed curves dipped and a return stop waited for a whole new window."""

from __future__ import annotations

import json
import os
import pathlib

import structlog

from aioseed.server.reporting.stats import Stats
from aioseed.server.trajectories import stamps

log = structlog.get_logger()

FILE = "window.json"


class EpisodeWindow:
    """A checkpoint attachment (``Checkpointer.attach``) of ``stats``' episode counts and windows."""

    def __init__(self, stats: Stats) -> None:
        self._stats = stats

    def save(self, directory: pathlib.Path, progress: stamps.Counters | None = None) -> int:
        """Writes the window (from the train thread: each deque is copied whole under the GIL), stamped with
        ``progress``, its checkpoint's counters; its bytes."""
        state = self._stats.episode_state()
        text = json.dumps(state if progress is None else {**state, stamps.KEY: stamps.stamp(progress)})
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / f"{FILE}.partial"
        partial.write_text(text)
        os.replace(partial, directory / FILE)  # a crash mid-write leaves the previous window whole
        return len(text)

    def restore(self, directory: pathlib.Path, progress: stamps.Counters | None = None) -> bool:
        """Reads what ``save`` wrote, before any episode is recorded; False where there is none (a checkpoint from
        before this file existed), it cannot be read, or it is newer than the checkpoint restored at ``progress``,
        which leaves the window empty, as for a new run."""
        path = directory / FILE
        try:
            state = json.loads(path.read_text())
            if not stamps.loadable(state.get(stamps.KEY), progress, path):
                return False
            self._stats.restore_episodes(state)
        except FileNotFoundError:
            return False
        except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            log.warning("episode_window_not_restored", path=str(path), error=repr(exc))
            return False
        return True
