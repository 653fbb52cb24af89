"""Refused calls, counted by status and logged at a bounded rate (pure Python).

A hostile client can be refused thousands of times a second; one log line each would bury the log
and cost the event loop. Every refusal is counted (``refusals/<status>`` in the metrics snapshot,
hence Prometheus and the console); the first of each status is logged, then at most one line per
status every ``every_s`` seconds, saying how many went unlogged meanwhile.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable

import structlog

log = structlog.get_logger()


class Refusals:
    """Verbs: ``record`` a refusal; ``metrics``."""

    def __init__(self, every_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._every_s = every_s
        self._clock = clock
        self.counts: collections.Counter[str] = collections.Counter()
        """Refusals so far, by status name."""
        self._logged_at: dict[str, float] = {}
        self._unlogged: collections.Counter[str] = collections.Counter()

    def record(self, status: str, peer: str, detail: str, **fields: object) -> None:
        self.counts[status] += 1
        now = self._clock()
        last = self._logged_at.get(status)
        if last is not None and now - last < self._every_s:
            self._unlogged[status] += 1
            return
        self._logged_at[status] = now
        log.info("stream_refused", code=status, peer=peer, detail=detail, unlogged_since=self._unlogged.pop(status, 0), **fields)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def metrics(self) -> dict[str, float]:
        return {
            "refusals/total": float(self.total),
            **{f"refusals/{status.lower()}": float(count) for status, count in self.counts.items()},
        }
