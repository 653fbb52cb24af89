"""What the batching tuner measures: one metrics interval (``Observation``), the intervals of one
setting pooled (``Measure``), and the noise of an interval's rate pooled over every setting (``Noise``)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from aioseed.server.batching.latency import quantile_ms

PRIOR_NOISE, PRIOR_DOF = 0.05, 4
"""Relative noise of one interval's steps/s assumed before any is measured, and its weight in intervals."""


@dataclasses.dataclass(frozen=True)
class Observation:
    """What the learner measured over one metrics interval."""

    seconds: float
    """Length of the interval."""
    steps_per_s: float
    """Env rows answered per second."""
    latency_p99_ms: float
    """Action latency p99 (NaN when no message was answered)."""
    connected_rows: int
    """Env rows of connected streams."""
    message_rows: int = 1
    """Rows of the largest message a connected stream sends (its K)."""
    latency_counts: np.ndarray | None = None
    """This interval's action latencies counted in ``latency.EDGES_MS`` buckets: a hold's p99 is then
    that of every message in it (without them, the worst interval's p99)."""


@dataclasses.dataclass
class Measure:
    """The intervals one setting was measured over."""

    seconds: float = 0.0
    steps: float = 0.0
    worst_p99: float = 0.0
    counts: np.ndarray | None = None
    rates: list[float] = dataclasses.field(default_factory=list)
    """Steps/s of each interval, for the noise of the mean."""

    def add(self, observation: Observation) -> None:
        p99 = observation.latency_p99_ms
        self._absorb(observation.seconds, observation.steps_per_s * observation.seconds, 0.0 if math.isnan(p99) else p99, observation.latency_counts)
        self.rates.append(observation.steps_per_s)

    def _absorb(self, seconds: float, steps: float, worst_p99: float, counts: np.ndarray | None) -> None:
        self.seconds += seconds
        self.steps += steps
        self.worst_p99 = max(self.worst_p99, worst_p99)
        if counts is not None:
            self.counts = counts if self.counts is None else self.counts + counts

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds if self.seconds else 0.0

    @property
    def p99(self) -> float:
        """Over every message of the measure when counted, else the worst interval's."""
        pooled = math.nan if self.counts is None else quantile_ms(self.counts, 99)
        return self.worst_p99 if math.isnan(pooled) else pooled

    @classmethod
    def merged(cls, measures: list[Measure]) -> Measure:
        out = cls()
        for measure in measures:
            out._absorb(measure.seconds, measure.steps, measure.worst_p99, measure.counts)
            out.rates += measure.rates
        return out


@dataclasses.dataclass
class Noise:
    """The relative spread of one interval's steps/s around its setting's mean, pooled over every
    setting measured (a property of the host more than of the setting; three intervals alone would
    give a standard error that is itself too noisy to trust)."""

    squares: float = PRIOR_NOISE**2 * PRIOR_DOF
    dof: float = PRIOR_DOF

    def add(self, measure: Measure) -> None:
        mean = measure.steps_per_s
        if len(measure.rates) >= 2 and mean > 0:
            self.squares += sum(((r - mean) / mean) ** 2 for r in measure.rates)
            self.dof += len(measure.rates) - 1

    def relative_error(self, *counts: int) -> float:
        """Standard error, relative to the mean, of the difference of means over these many intervals."""
        return math.sqrt(self.squares / self.dof * sum(1 / max(n, 1) for n in counts))
