"""The batching auto-tuner against simulated batchers whose throughput and latency are known
functions of the settings (one observation per simulated second)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from aioseed.server.autotune import BATCH_SIZES, DEADLINES_MS, BatchingConfig, BatchTuner, Observation
from aioseed.server.batcher import BatcherConfig

BAD_START = BatcherConfig(max_batch_size=1, deadline_ms=0.1)
Model = Callable[[int, float], tuple[float, float]]


def peaked(best_batch: int, best_deadline: float, peak: float = 10_000.0) -> Model:
    """Steps/s falling off in log space around (best_batch, best_deadline); p99 = deadline + batch / 8 ms."""

    def model(batch: int, deadline: float) -> tuple[float, float]:
        distance = (math.log2(batch) - math.log2(best_batch)) ** 2 + (math.log2(deadline) - math.log2(best_deadline)) ** 2
        return peak * math.exp(-distance / 16), deadline + batch / 8

    return model


def run(tuner: BatchTuner, model: Model, rows: int, seconds: int, noise: float = 0.0, rng: random.Random | None = None) -> list[BatcherConfig]:
    """Feeds ``seconds`` observations of ``model`` at the tuner's settings; returns the settings per second."""
    rng = rng or random.Random(0)
    settings = tuner.settings
    trace = []
    for _ in range(seconds):
        steps, p99 = model(settings.max_batch_size, settings.deadline_ms)
        steps *= 1 + rng.uniform(-noise, noise)
        decision = tuner.observe(Observation(1.0, steps, p99, rows))
        if decision is not None:
            settings = decision.settings
        trace.append(settings)
    return trace


def test_it_climbs_from_a_bad_start_to_the_optimum_and_stays() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BAD_START)
    trace = run(tuner, peaked(64, 4.0), rows=1024, seconds=400, noise=0.02)
    assert tuner.converged
    assert (trace[-1].max_batch_size, trace[-1].deadline_ms) == (64, 4.0)
    assert len(set(trace[-200:])) == 1  # held, no oscillation


def test_re_probing_visits_the_neighbours_and_comes_back() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=60.0), BAD_START)
    run(tuner, peaked(64, 4.0), rows=1024, seconds=300)
    trace = run(tuner, peaked(64, 4.0), rows=1024, seconds=120)
    assert len(set(trace)) > 1 and trace[-1] == BatcherConfig(64, 4.0)
    away = sum(s != BatcherConfig(64, 4.0) for s in trace)
    assert away <= 0.3 * len(trace)  # exploring costs at most ~30% of the time at neighbouring settings


def test_it_meets_the_latency_target_at_the_best_setting_that_does() -> None:
    # Unconstrained best: batch 256, deadline 16 ms (p99 48 ms); with a 20 ms target the best feasible
    # setting trades some throughput for latency.
    model = peaked(256, 16.0)
    tuner = BatchTuner(BatchingConfig(latency_target_ms=20.0), BAD_START)
    trace = run(tuner, model, rows=1024, seconds=600)
    final = trace[-1]
    steps, p99 = model(final.max_batch_size, final.deadline_ms)
    assert p99 <= 20.0
    feasible = [model(b, d)[0] for b in BATCH_SIZES for d in DEADLINES_MS if model(b, d)[1] <= 20.0]
    assert steps >= 0.95 * max(feasible)


def test_it_explores_again_when_actors_join_and_the_optimum_moves() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None), BAD_START)
    run(tuner, peaked(16, 2.0), rows=16, seconds=300)
    assert tuner.settings.max_batch_size == 16
    trace = run(tuner, peaked(256, 2.0), rows=512, seconds=300)
    assert trace[-1].max_batch_size == 256 and tuner.converged


def test_batch_sizes_never_exceed_the_connected_rows() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None), BAD_START)
    trace = run(tuner, peaked(4096, 2.0), rows=100, seconds=300)
    assert max(s.max_batch_size for s in trace) == 128  # the smallest grid size that holds all 100 rows


def test_a_throughput_drop_at_the_same_setting_starts_a_new_search() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BAD_START)
    run(tuner, peaked(32, 2.0), rows=64, seconds=300)
    assert tuner.converged
    # The train step now takes half the CPU, and larger batches pay off more.
    slower = peaked(64, 8.0, peak=5_000.0)
    trace = run(tuner, slower, rows=64, seconds=300)
    assert (trace[-1].max_batch_size, trace[-1].deadline_ms) == (64, 8.0)


def test_each_change_is_one_grid_step_and_held_at_least_the_hold_time() -> None:
    config = BatchingConfig(latency_target_ms=None, hold_s=3.0, settle_s=1.0)
    tuner = BatchTuner(config, BAD_START)
    trace = run(tuner, peaked(64, 4.0), rows=1024, seconds=300, noise=0.05)
    changes = [i for i in range(1, len(trace)) if trace[i] != trace[i - 1]]
    assert all(b - a >= config.hold_s + config.settle_s for a, b in zip(changes, changes[1:]))
    for i in changes:
        before, after = trace[i - 1], trace[i]
        db = abs(BATCH_SIZES.index(after.max_batch_size) - BATCH_SIZES.index(before.max_batch_size))
        dd = abs(DEADLINES_MS.index(after.deadline_ms) - DEADLINES_MS.index(before.deadline_ms))
        assert db + dd <= 2  # a neighbour, or back from one neighbour to the next
