"""Latency counts in log buckets: quantiles exact to a bucket, over any span of readings."""

from __future__ import annotations

import math

import numpy as np

from aioseed.server.batching.latency import RATIO, LatencyCounts, quantile_ms


def test_quantiles_of_counts_match_numpy_to_a_bucket() -> None:
    rng = np.random.default_rng(0)
    samples = rng.lognormal(mean=math.log(20.0), sigma=0.8, size=20_000)
    counts = LatencyCounts()
    for ms in samples:
        counts.add(float(ms))
    for q in (50, 90, 99):
        exact = float(np.percentile(samples, q))
        assert abs(math.log(quantile_ms(counts.read(), q) / exact)) <= math.log(RATIO)


def test_a_span_is_the_difference_of_two_readings_and_one_slow_second_is_weighed_by_its_messages() -> None:
    counts = LatencyCounts()
    for _ in range(1000):
        counts.add(10.0)
    start = counts.read()
    for _ in range(9900):
        counts.add(20.0)
    for _ in range(50):  # a hiccup: 0.5% of the span's messages
        counts.add(300.0)
    span = counts.read() - start
    assert int(span.sum()) == 9950
    assert abs(quantile_ms(span, 99) / 20.0 - 1) < RATIO - 1  # the worst second's p99 would be 300
    assert abs(quantile_ms(span, 99.9) / 300.0 - 1) < RATIO - 1
    assert abs(quantile_ms(start, 50) / 10.0 - 1) < RATIO - 1  # the first reading is unchanged


def test_no_messages_is_nan_and_out_of_range_latencies_are_kept() -> None:
    counts = LatencyCounts()
    assert math.isnan(quantile_ms(counts.read(), 99))
    counts.add(0.0)
    counts.add(1e9)
    assert int(counts.read().sum()) == 2
    assert quantile_ms(counts.read(), 100) >= 1e6
