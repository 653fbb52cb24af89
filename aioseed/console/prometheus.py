"""``/metrics``: the learner's latest snapshot in the Prometheus exposition format.

Names follow the module map: ``batcher/fill_ms_p50`` -> ``aioseed_batcher_fill_ms_p50``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

COUNTERS = frozenset({"charts/frames", "charts/episodes", "charts/partial_episodes", "learner/train_steps"})


def metric_name(key: str) -> str:
    return "aioseed_" + re.sub(r"[^a-zA-Z0-9_]", "_", key)


class SnapshotCollector(Collector):
    """Yields one gauge per numeric field of the latest snapshot (NaN fields are left out)."""

    def __init__(self, latest: Callable[[], dict[str, float]]) -> None:
        self._latest = latest

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for key, value in sorted(self._latest().items()):
            if key == "time" or not isinstance(value, int | float) or math.isnan(value):
                continue
            kind = "total so far" if key in COUNTERS else "latest interval"
            yield GaugeMetricFamily(metric_name(key), f"aioseed {key} ({kind})", value=float(value))


def handler(latest: Callable[[], dict[str, float]]) -> Callable:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(latest))

    async def metrics(request: web.Request) -> web.Response:
        response = web.Response(body=generate_latest(registry))
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    return metrics
