"""`bench autotune`'s workloads and figures: the issue's three set-ups, throughput over a window of
snapshots and the p99 of its counted latencies, and the settling time on a rolling mean."""

from __future__ import annotations

import asyncio
import math

import numpy as np

from aioseed.bench.autotune import final_against_best, settle_time, window, workload
from aioseed.server.batching.latency import LatencyCounts, quantile_ms


def test_the_workloads_are_64_and_1024_streams_at_k1_and_pong_at_k32() -> None:
    for name, streams in (("cartpole-64", 64), ("cartpole-1024", 1024)):
        run = workload(name)
        assert run.num_actors * run.envs_per_actor == streams and run.envs_per_message == 1
        assert not run.learner.batching.auto  # the bench turns it on after the grid
    pong = workload("pong")
    assert pong.envs_per_message == 32 and pong.num_actors * pong.envs_per_actor == 64


def test_window_reads_rows_per_second_after_a_time_and_the_p99_of_its_counted_latencies() -> None:
    series = [{"time": t, "charts/frames_per_s": 400.0 * t} for t in (1.0, 2.0, 3.0, 4.0)]
    counts = LatencyCounts()
    for ms in np.linspace(1.0, 100.0, 1000):
        counts.add(float(ms))
    figures = window(series, since=1.5, frames_per_step=4, latency_counts=counts.read())
    assert figures == {"steps_per_s": (800 + 1200 + 1600) / 3 / 4, "p99_ms": quantile_ms(counts.read(), 99)}
    assert 95.0 < figures["p99_ms"] < 101.0
    assert math.isnan(window(series, since=3.5, frames_per_step=4, latency_counts=counts.read())["steps_per_s"])  # one point is no rate


def test_settle_time_is_when_the_rolling_mean_first_comes_within_5_percent() -> None:
    times = [float(t) for t in range(30)]
    rates = [100.0] * 10 + [1000.0] * 15 + [800.0] * 5
    assert settle_time(times, rates, final=1000.0) == 19.0  # the 10 s mean reaches 955 at t=19
    assert math.isnan(settle_time(times, [100.0] * 30, final=1000.0))


def test_the_final_setting_is_held_against_the_best_point_abba_so_a_linear_drift_cancels() -> None:
    # The host slows by 10% per hold; the final setting runs at 0.9 of the best point throughout.
    held: list[tuple[int, float]] = []

    async def hold(size: int, deadline: float, seconds: float) -> dict[str, float]:
        held.append((size, deadline))
        speed = 1000.0 * (1 - 0.1 * (len(held) - 1)) * (0.9 if (size, deadline) == (32, 4.0) else 1.0)
        return {"steps_per_s": speed, "p99_ms": 20.0}

    final, best = {"max_batch_size": 32, "deadline_ms": 4.0}, {"max_batch_size": 128, "deadline_ms": 8.0}
    result = asyncio.run(final_against_best(hold, final, best, seconds=10.0))
    assert held == [(32, 4.0), (128, 8.0), (128, 8.0), (32, 4.0)]
    assert result is not None and result["ratio"] == 0.9
    assert asyncio.run(final_against_best(hold, best, best, seconds=10.0)) == {"ratio": 1.0, "same_setting": True}
