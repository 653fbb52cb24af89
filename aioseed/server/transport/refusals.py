"""Refused calls, counted by status and logged at a bounded rate, and the garbage they leave collected.

A hostile client can be refused thousands of times a second; one log line each would bury the log
and cost the event loop. Every refusal is counted (``refusals/<status>`` in the metrics snapshot,
hence Prometheus and the console); the first of each status is logged, then at most one line per
status every ``every_s`` seconds, saying how many went unlogged meanwhile.
"""

from __future__ import annotations

import collections
import gc
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
        self._collected_at = 0
        self._trailing = False
        self.collections = 0
        """Cyclic collections ``collect_cycles`` has run."""
        self.collect_ms = 0.0
        """How long the last of them held the event loop (a process that froze its start-up objects: well under a
        millisecond; one that did not walks all of TensorFlow's, ~200 ms here)."""

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

    def collect_cycles(self) -> None:
        """Runs Python's cyclic collector if calls were refused since the last call (the transport calls
        this once a second).

        A refused call leaves a reference cycle in grpc.aio's Python layer that holds part of what the call
        received. Python collects cycles by object counts, not bytes, so a flood of refused large uploads
        outpaced it: the learner's RSS grew by ~2 GB per 10 s of 4 MiB uploads (bench impala-hostile) and
        stayed. One collection a second while refusals come in keeps it flat; the learner and serve processes freeze
        their long-lived objects (``gc.freeze`` in ``aioseed.commands.learner`` and ``aioseed.commands.serve``) after start-up, so a collection
        scans only what is new.

        One more collection follows on the call after the last refusal: a refusal is counted before its call
        has ended, so a collection in between cannot free that call's cycle yet."""
        refused = self.total != self._collected_at
        if refused or self._trailing:
            self._collected_at = self.total
            self._trailing = refused
            started = time.perf_counter()
            gc.collect()
            self.collect_ms = (time.perf_counter() - started) * 1e3
            self.collections += 1

    @property
    def collected(self) -> bool:
        """Whether the collections owed to the refusals so far have all run, the trailing one included."""
        return self.total == self._collected_at and not self._trailing

    def metrics(self) -> dict[str, float]:
        return {
            "refusals/total": float(self.total),
            **{f"refusals/{status.lower()}": float(count) for status, count in self.counts.items()},
            **({"refusals/collect_ms": self.collect_ms} if self.collections else {}),
        }
