"""The episode window saved with each checkpoint. A resumed run's mean return (the progress line, the console,
``stop.at_return``, the curves) goes on from the episodes before its restart: it started again from its first
few, so resumed curves dipped and a return stop waited for a whole new window."""

from __future__ import annotations

import json
import os
import pathlib

import structlog

from aioseed.server.reporting.stats import Stats

log = structlog.get_logger()

FILE = "window.json"


class EpisodeWindow:
    """A checkpoint attachment (``Checkpointer.attach``) of ``stats``' episode counts and windows."""

    def __init__(self, stats: Stats) -> None:
        self._stats = stats

    def save(self, directory: pathlib.Path) -> int:
        """Writes the window (from the train thread: each deque is copied whole under the GIL); its bytes."""
        text = json.dumps(self._stats.episode_state())
        directory.mkdir(parents=True, exist_ok=True)
        partial = directory / f"{FILE}.partial"
        partial.write_text(text)
        os.replace(partial, directory / FILE)  # a crash mid-write leaves the previous window whole
        return len(text)

    def restore(self, directory: pathlib.Path) -> bool:
        """Reads what ``save`` wrote, before any episode is recorded; False where there is none (a checkpoint from
        before this file existed) or it cannot be read, which leaves the window empty, as for a new run."""
        path = directory / FILE
        try:
            self._stats.restore_episodes(json.loads(path.read_text()))
        except FileNotFoundError:
            return False
        except (OSError, ValueError, TypeError, KeyError) as exc:
            log.warning("episode_window_not_restored", path=str(path), error=repr(exc))
            return False
        return True
