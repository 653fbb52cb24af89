"""The batching auto-tuner against simulated batchers whose throughput and latency are known
functions of the settings (one observation per simulated second)."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from aioseed.server.batching.autotune import BATCH_SIZES, DEADLINES_MS, BatchingConfig, BatchTuner
from aioseed.server.batching.batcher import BatcherConfig
from aioseed.server.batching.latency import LatencyCounts, quantile_ms
from aioseed.server.batching.tuner_measure import Observation

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
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None), BAD_START)  # re-probes every 120 s
    run(tuner, peaked(64, 4.0), rows=1024, seconds=300)
    trace = run(tuner, peaked(64, 4.0), rows=1024, seconds=480)
    home = BatcherConfig(64, 4.0)
    visits = [s for i, s in enumerate(trace) if s != home and (i == 0 or trace[i - 1] == home)]
    returns = [i for i in range(1, len(trace)) if trace[i] == home and trace[i - 1] != home]
    assert visits and len(returns) >= len(visits) - 1  # every probe came back home (but one still running)
    model = peaked(64, 4.0)
    mean = sum(model(s.max_batch_size, s.deadline_ms)[0] for s in trace) / len(trace)
    assert mean >= 0.97 * model(64, 4.0)[0]  # exploring costs under 3% of the throughput


def test_it_meets_the_latency_target_at_the_best_setting_that_does() -> None:
    # Unconstrained best: batch 256, deadline 16 ms (p99 48 ms); with a 20 ms target the best feasible
    # setting trades some throughput for latency.
    model = peaked(256, 16.0)
    tuner = BatchTuner(BatchingConfig(latency_target_ms=20.0), BAD_START)
    trace = run(tuner, model, rows=1024, seconds=600)
    final = max(set(trace[-200:]), key=trace[-200:].count)  # where it stays between re-probes
    steps, p99 = model(final.max_batch_size, final.deadline_ms)
    assert p99 <= 20.0
    feasible = [model(b, d)[0] for b in BATCH_SIZES for d in DEADLINES_MS if model(b, d)[1] <= 20.0]
    assert steps >= 0.95 * max(feasible)


def test_it_explores_again_when_actors_join_and_the_optimum_moves() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BAD_START)
    run(tuner, peaked(16, 2.0), rows=16, seconds=300)
    assert tuner.settings.max_batch_size == 16
    trace = run(tuner, peaked(256, 2.0), rows=512, seconds=300)
    assert trace[-1].max_batch_size == 256 and tuner.converged


def test_batch_sizes_go_no_further_than_the_first_grid_size_above_the_connected_rows() -> None:
    # Beyond it every cap behaves the same: only the deadline closes a batch.
    for rows, cap in ((100, 128), (64, 128)):
        tuner = BatchTuner(BatchingConfig(latency_target_ms=None), BAD_START)
        trace = run(tuner, peaked(4096, 2.0), rows=rows, seconds=300)
        assert max(s.max_batch_size for s in trace) == cap


def test_a_throughput_drop_at_the_same_setting_starts_a_new_search() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BAD_START)
    run(tuner, peaked(32, 2.0), rows=64, seconds=300)
    assert tuner.converged
    # The train step now takes half the CPU, and larger batches pay off more.
    slower = peaked(64, 8.0, peak=5_000.0)
    trace = run(tuner, slower, rows=64, seconds=300)
    assert (trace[-1].max_batch_size, trace[-1].deadline_ms) == (64, 8.0)


def test_each_change_is_held_and_re_probes_try_only_the_next_grid_steps() -> None:
    config = BatchingConfig(latency_target_ms=None, hold_s=3.0, settle_s=1.0, reprobe_s=30.0)
    tuner = BatchTuner(config, BAD_START)
    trace = run(tuner, peaked(64, 4.0), rows=1024, seconds=300, noise=0.02)
    changes = [i for i in range(1, len(trace)) if trace[i] != trace[i - 1]]
    assert all(b - a >= config.hold_s + config.settle_s for a, b in zip(changes, changes[1:]))
    for i in changes:  # at most 4 grid steps from home, so at most 8 between two candidates
        before, after = trace[i - 1], trace[i]
        db = abs(BATCH_SIZES.index(after.max_batch_size) - BATCH_SIZES.index(before.max_batch_size))
        dd = abs(DEADLINES_MS.index(after.deadline_ms) - DEADLINES_MS.index(before.deadline_ms))
        assert max(db, dd) <= 8
    # Converged at (64, 4 ms): from here on, re-probes visit the four one-step neighbours only.
    home = (BATCH_SIZES.index(64), DEADLINES_MS.index(4.0))
    visited = {(BATCH_SIZES.index(s.max_batch_size), DEADLINES_MS.index(s.deadline_ms)) for s in trace[-100:]}
    assert home in visited and len(visited) > 1
    assert all(max(abs(b - home[0]), abs(d - home[1])) <= 1 for b, d in visited)


def test_a_plateau_of_deadlines_below_the_inference_time_is_crossed() -> None:
    # Inference takes 1 ms: deadlines under it change nothing, so one or two steps from 0.1 ms find no gain.
    base = peaked(64, 8.0)

    def model(batch: int, deadline: float) -> tuple[float, float]:
        return base(batch, max(deadline, 1.0))

    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BatcherConfig(64, 0.1))
    trace = run(tuner, model, rows=1024, seconds=300)
    assert (trace[-1].max_batch_size, trace[-1].deadline_ms) == (64, 8.0)


def test_when_no_setting_meets_the_target_it_still_climbs_throughput() -> None:
    # The train step sets the p99 (80 ms at every setting): the target is out of reach, throughput still counts.
    base = peaked(64, 4.0)

    def model(batch: int, deadline: float) -> tuple[float, float]:
        return base(batch, deadline)[0], 80.0

    tuner = BatchTuner(BatchingConfig(latency_target_ms=50.0, reprobe_s=1e9), BAD_START)
    trace = run(tuner, model, rows=1024, seconds=400)
    assert (trace[-1].max_batch_size, trace[-1].deadline_ms) == (64, 4.0)


def test_from_a_bad_start_where_only_both_axes_together_pay_it_is_near_the_best_within_60_s() -> None:
    # As CartPole with 64 streams measured here: batch 1 or a deadline under 1 ms gives ~770 steps/s
    # (p99 ~90 ms) whatever the other axis; larger batches with longer deadlines give up to ~3,500.
    best = peaked(128, 32.0, peak=3_500.0)

    def model(batch: int, deadline: float) -> tuple[float, float]:
        if batch <= 2 or deadline <= 0.5:
            return 770.0, 90.0
        return best(batch, deadline)[0], 20.0

    tuner = BatchTuner(BatchingConfig(latency_target_ms=50.0), BAD_START)
    trace = run(tuner, model, rows=64, seconds=160, noise=0.03)
    top = max(model(b, d)[0] for b in BATCH_SIZES if b <= 64 for d in DEADLINES_MS if model(b, d)[1] <= 50.0)
    reached = next(i for i, s in enumerate(trace) if model(s.max_batch_size, s.deadline_ms)[0] >= 0.95 * top)
    assert reached <= 60
    late = trace[80:]
    assert sum(model(s.max_batch_size, s.deadline_ms)[0] for s in late) / len(late) >= 0.95 * top


def test_after_a_change_it_waits_out_the_old_settings_latency_before_measuring() -> None:
    # 1,024 closed-loop rows at batch 1: a 3 s p99. Rows queued then are answered over the next ~3 s,
    # and would charge their latency to the new setting.
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, hold_s=3.0, settle_s=1.0), BAD_START)
    changes = [t for t in range(60) if tuner.observe(Observation(1.0, 100.0, 3000.0, 1024)) is not None]
    assert len(changes) >= 2 and all(b - a >= 1.5 * 3.0 + 3.0 for a, b in zip(changes, changes[1:]))


def test_a_passing_slowdown_of_the_host_does_not_start_a_new_search() -> None:
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BAD_START)
    model = peaked(32, 2.0)
    run(tuner, model, rows=64, seconds=300)
    assert tuner.converged
    settled = tuner.settings
    for second in range(60):  # 3 s at half speed (another tenant), then as before
        steps, p99 = model(settled.max_batch_size, settled.deadline_ms)
        assert tuner.observe(Observation(1.0, steps * (0.5 if 20 <= second < 23 else 1.0), p99, 64)) is None
    assert tuner.converged and tuner.settings == settled


def test_under_noise_a_small_real_gain_near_the_top_is_still_taken() -> None:
    # Per-second rates swing 6% (as on 2 shared cores); the neighbour (128, 16 ms) is 8% better than the
    # start, every other setting 10% worse. One 3 s hold often measures such a gain below zero.
    def model(batch: int, deadline: float) -> tuple[float, float]:
        return {(64, 8.0): 1000.0, (128, 16.0): 1080.0}.get((batch, deadline), 900.0), 20.0

    found = 0
    for seed in range(20):
        tuner = BatchTuner(BatchingConfig(latency_target_ms=None), BatcherConfig(64, 8.0))  # re-probes every 120 s
        rng = random.Random(seed)
        settings, trace = tuner.settings, []
        for _ in range(300):
            steps, p99 = model(settings.max_batch_size, settings.deadline_ms)
            decision = tuner.observe(Observation(1.0, steps * (1 + rng.gauss(0, 0.06)), p99, 1024))
            settings = decision.settings if decision else settings
            trace.append((settings.max_batch_size, settings.deadline_ms))
        found += max(set(trace[-100:]), key=trace[-100:].count) == (128, 16.0)  # where it stays
    assert found >= 18


def test_batches_never_split_a_message() -> None:
    # Pong's actors send 32 rows a message: a batch of 2 splits each into 16 and answers it after the last.
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None), BAD_START)
    model = peaked(64, 2.0)
    settings, trace = tuner.settings, []
    for _ in range(200):
        steps, p99 = model(settings.max_batch_size, settings.deadline_ms)
        decision = tuner.observe(Observation(1.0, steps, p99, connected_rows=64, message_rows=32))
        settings = decision.settings if decision else settings
        trace.append(settings)
    assert trace[0].max_batch_size == 32  # moved off the bad start at once
    assert min(s.max_batch_size for s in trace) == 32 and trace[-1].max_batch_size == 64


def test_from_a_bad_start_both_axes_growing_are_scanned_even_when_the_first_step_looks_worse() -> None:
    # 1,024 streams at batch 1-2 and sub-ms deadlines: ~800 steps/s, and batch 2 / 0.25 ms measured
    # lower than the start (the start's backlog draining); from batch 16 / 2 ms up, ~4,000.
    def model(batch: int, deadline: float) -> tuple[float, float]:
        if batch >= 16 and deadline >= 2.0:
            return 4000.0, 100.0
        return (600.0 if (batch, deadline) == (2, 0.25) else 800.0), 1500.0

    tuner = BatchTuner(BatchingConfig(latency_target_ms=50.0), BAD_START)
    trace = run(tuner, model, rows=1024, seconds=120, noise=0.03)
    reached = next(i for i, s in enumerate(trace) if model(s.max_batch_size, s.deadline_ms)[0] == 4000.0)
    assert reached <= 30 and model(trace[-1].max_batch_size, trace[-1].deadline_ms)[0] == 4000.0


def test_a_hold_is_judged_by_the_p99_of_all_its_messages_not_its_worst_second() -> None:
    # At the optimum one second in four stalls 2% of its messages for 400 ms: that second's p99 is 400
    # ms, but over a hold 0.5% of the messages are slow and the p99 is 20 ms, under the target.
    model = peaked(64, 4.0)

    def observe(tuner: BatchTuner, second: int) -> BatcherConfig:
        settings = tuner.settings
        steps, _ = model(settings.max_batch_size, settings.deadline_ms)
        counts = LatencyCounts()
        hiccup = (settings.max_batch_size, settings.deadline_ms) == (64, 4.0) and second % 4 == 0
        for index in range(1000):
            counts.add(400.0 if hiccup and index < 20 else 20.0)
        decision = tuner.observe(Observation(1.0, steps, quantile_ms(counts.read(), 99), 1024, latency_counts=counts.read()))
        return decision.settings if decision is not None else settings

    tuner = BatchTuner(BatchingConfig(latency_target_ms=50.0, reprobe_s=1e9), BAD_START)
    trace = [observe(tuner, second) for second in range(400)]
    assert (trace[-1].max_batch_size, trace[-1].deadline_ms) == (64, 4.0)
    assert "over the latency target" not in tuner.reason



def test_a_small_gain_over_a_briefly_measured_home_is_settled_by_measuring_home_again() -> None:
    # As 1,024 streams measured here: a large first step (taken on hold_s) lands on a broad top where
    # the next grid step gains 8% while one second's rate swings by 6%. Against the briefly measured
    # home that gain cannot clear the noise bound; home is measured again and the two are judged on all
    # their intervals (without this, about half of the seeds stayed at the home).
    def model(batch: int, deadline: float) -> tuple[float, float]:
        return {(32, 4.0): 2_500.0, (64, 8.0): 4_000.0, (128, 8.0): 4_320.0}.get((batch, deadline), 3_600.0), 20.0

    ends, rematches = [], 0
    for seed in range(40):
        tuner = BatchTuner(BatchingConfig(latency_target_ms=50.0, reprobe_s=1e9), BatcherConfig(32, 4.0))
        rng, settings = random.Random(seed), tuner.settings
        for _ in range(80):
            steps, p99 = model(settings.max_batch_size, settings.deadline_ms)
            decision = tuner.observe(Observation(1.0, steps * (1 + rng.gauss(0, 0.06)), p99, 1024))
            if decision is not None:
                settings = decision.settings
                rematches += "may beat" in decision.reason
        ends.append((settings.max_batch_size, settings.deadline_ms))
    assert rematches > 0
    assert ends.count((128, 8.0)) >= 30, ends


def test_a_move_that_wins_on_latency_alone_does_not_stop_the_scan_from_a_bad_start() -> None:
    # As CartPole with 64 streams measured here once: every setting under batch 4 or a 1 ms deadline
    # gives ~770 steps/s over the target, and the first one's p99 carries the backlog of the start, so
    # the next diagonal step wins on latency with the throughput flat. The scan must go on to the top.
    best = peaked(128, 32.0, peak=3_500.0)

    def model(batch: int, deadline: float) -> tuple[float, float]:
        if batch <= 4 or deadline <= 0.5:
            return 770.0, (130.0 if batch == 1 else 90.0)
        return best(batch, deadline)[0], 20.0

    tuner = BatchTuner(BatchingConfig(latency_target_ms=50.0), BAD_START)
    trace = run(tuner, model, rows=64, seconds=160, noise=0.03)
    late = trace[80:]
    assert sum(model(s.max_batch_size, s.deadline_ms)[0] for s in late) / len(late) >= 3_000


def test_a_gain_far_over_the_latency_target_does_not_stop_the_scan_from_a_bad_start() -> None:
    # As 1,024 streams measured here once: batch 1's first hold caught a passing low (700 steps/s), so
    # batch 2 gained 14%, more than a plateau's noise; but every setting under batch 16 / 2 ms gives
    # ~800 steps/s with a 1.5 s p99. Single steps from batch 2 would find nothing and stay there.
    def model(batch: int, deadline: float) -> tuple[float, float]:
        if batch >= 16 and deadline >= 2.0:
            return 4000.0, 100.0
        return (700.0 if batch == 1 else 800.0), 1500.0

    tuner = BatchTuner(BatchingConfig(latency_target_ms=50.0), BAD_START)
    trace = run(tuner, model, rows=1024, seconds=120, noise=0.01)
    assert trace[10].max_batch_size == 2  # batch 2 was taken on its gain
    reached = next(i for i, s in enumerate(trace) if model(s.max_batch_size, s.deadline_ms)[0] == 4000.0)
    assert reached <= 60 and model(trace[-1].max_batch_size, trace[-1].deadline_ms)[0] == 4000.0


def test_a_stall_of_acting_neither_crashes_the_tuner_nor_moves_it_off_the_optimum() -> None:
    """Acting stalls (a paused learner): every setting measures 0 steps/s, a home scored 0 included, and
    the search that the drop starts must still compare candidates with it, then find the optimum again."""
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BAD_START)
    run(tuner, peaked(64, 4.0), rows=1024, seconds=300)
    assert tuner.converged
    run(tuner, lambda batch, deadline: (0.0, math.nan), rows=1024, seconds=120)
    trace = run(tuner, peaked(64, 4.0), rows=1024, seconds=400)
    assert (trace[-1].max_batch_size, trace[-1].deadline_ms) == (64, 4.0) and tuner.converged


def test_acting_that_trains_nothing_over_the_latency_target_does_not_crash_the_tuner() -> None:
    """0 steps/s while every setting misses the target scores home exactly -INFEASIBLE (0 on its own scale): a
    candidate's gain over it used to divide by that 0, and the learner's TaskGroup died with the tuner."""
    tuner = BatchTuner(BatchingConfig(), BatcherConfig())
    trace = run(tuner, lambda batch, deadline: (0.0, 120.0), rows=300, seconds=60)
    assert len(set(trace)) > 1  # it went on searching


def test_a_start_above_the_connected_rows_is_brought_into_range_and_searched_from_at_once() -> None:
    """The default start (batch 256) with 32 rows: every neighbour lay above the rows, so the tuner used to
    declare it converged untried and move only at the re-probe, two minutes later."""
    tuner = BatchTuner(BatchingConfig(latency_target_ms=None, reprobe_s=1e9), BatcherConfig(max_batch_size=256, deadline_ms=2.0))
    trace = run(tuner, peaked(8, 4.0), rows=32, seconds=120)
    assert trace[0].max_batch_size == 64  # the first grid size above the rows
    assert BatcherConfig(8, 4.0) in trace[:60] and trace[-1] == BatcherConfig(8, 4.0) and tuner.converged
