"""Action latencies counted in log-spaced buckets: the quantiles of any span are exact to a bucket.

A span's p99 is that of every message answered in it. The worst of its one-second p99s is not: it
grows with the span's length (a minute holds more of the host's hiccups than a few seconds), so spans
of different lengths could not be compared, and one slow second would outweigh a steady minute.
Counts are cumulative; the counts of a span are the difference of two readings.
"""

from __future__ import annotations

import bisect
import math

import numpy as np

RATIO = 1.04
"""Width of a bucket: a quantile is known to within 2%."""
EDGES_MS = tuple(float(e) for e in np.geomspace(0.01, 1e6, round(math.log(1e8) / math.log(RATIO)) + 1))
"""Upper edges of the buckets, 10 us .. 1000 s (a last bucket holds anything slower)."""


class LatencyCounts:
    """Verbs: ``add`` a latency (once per message, on the event loop), ``read`` the cumulative counts."""

    def __init__(self) -> None:
        self._counts = [0] * (len(EDGES_MS) + 1)
        """A list: incrementing one of its ints costs a fraction of a numpy element's."""

    def add(self, ms: float) -> None:
        self._counts[bisect.bisect_left(EDGES_MS, ms)] += 1

    def read(self) -> np.ndarray:
        """The counts so far (subtract an earlier reading for a span's)."""
        return np.array(self._counts, np.int64)


def quantile_ms(counts: np.ndarray, q: float) -> float:
    """The ``q``-th percentile of counted latencies (the geometric middle of its bucket; NaN when none)."""
    total = int(counts.sum())
    if total <= 0:
        return math.nan
    index = int(np.searchsorted(np.cumsum(counts), max(1, math.ceil(total * q / 100))))
    upper = EDGES_MS[min(index, len(EDGES_MS) - 1)]
    return upper if index in (0, len(EDGES_MS)) else upper / math.sqrt(RATIO)
