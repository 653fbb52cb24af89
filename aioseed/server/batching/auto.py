"""The batching auto-tuner as the learner runs it: on or off (and why), fed each metrics snapshot, and what it
decides staged on the batcher for the next batch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import structlog

from aioseed.server.batching.autotune import BatchingConfig, BatchTuner
from aioseed.server.batching.batcher import Batcher
from aioseed.server.batching.tuner_measure import Observation

log = structlog.get_logger()


class AutoBatching:
    """Verbs: ``set`` (on or off), ``observe`` a snapshot, ``state``."""

    def __init__(self, config: BatchingConfig, batcher: Batcher, latency_counts: Callable[[], np.ndarray], metrics_every_s: float) -> None:
        """``latency_counts()``: the action latencies counted so far (a span's p99 comes from two readings)."""
        self._config = config
        self._batcher = batcher
        self._latency_counts = latency_counts
        self._every_s = metrics_every_s
        self._tuner = BatchTuner(config, batcher.config)
        self.enabled = config.auto
        self._off = "not enabled"
        """Why the tuner is off."""
        self._seen_at = 0.0
        """time of the last snapshot the tuner saw."""
        self._seen_counts = latency_counts()
        """Action latency counts when the tuner last saw a snapshot."""

    def state(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "reason": self._tuner.reason if self.enabled else f"off: {self._off}",
            "latency_target_ms": self._config.latency_target_ms,
        }

    def set(self, enabled: bool, why: str = "requested") -> None:
        """On (the tuner starts from the settings staged now) or off (they stay)."""
        if enabled and not self.enabled:
            self._tuner = BatchTuner(self._config, self._batcher.config)
        self.enabled = enabled
        if not enabled:
            self._off = why
        log.info("batching_auto", enabled=enabled, reason=why)

    def observe(self, snapshot: dict[str, float], connected_rows: int, message_rows: int, paused: bool) -> None:
        """Each metrics snapshot, while on: the tuner observes it and the batcher stages what it decides."""
        seconds = snapshot["time"] - self._seen_at if self._seen_at else self._every_s
        self._seen_at = snapshot["time"]
        counts, self._seen_counts = self._seen_counts, self._latency_counts()
        if not self.enabled or paused:  # paused, acting stalls: no setting's throughput to measure
            return
        decision = self._tuner.observe(
            Observation(
                seconds=seconds,
                steps_per_s=snapshot["batcher/rows_per_s"],  # evaluation rows too: serve's are all evaluation
                latency_p99_ms=snapshot["inference/latency_ms_p99"],
                connected_rows=connected_rows,
                message_rows=message_rows,
                latency_counts=self._seen_counts - counts,
            )
        )
        if decision is not None:
            self._batcher.configure(max_batch_size=decision.settings.max_batch_size, deadline_ms=decision.settings.deadline_ms)
