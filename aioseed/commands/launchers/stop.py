"""The learner stops once every training actor a launch started has exited: it would wait for frames that
never come."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

if TYPE_CHECKING:
    from aioseed.server.learner import Learner

log = structlog.get_logger()

ACTORS_EXITED = "actors exited"
"""The stop reason when every local actor has exited (``aioseed run`` then exits 1)."""


def stop_without_actors(learner: Learner, actors: list[str]) -> None:
    """Stops ``learner`` (``actors`` say how each ended), unless a stop is already under way (which ends them)."""
    if learner.stopping.reason is None:
        log.error("actors_exited", actors=actors, hint="their errors are above")
        learner.request_stop(ACTORS_EXITED)
