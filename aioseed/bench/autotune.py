"""``aioseed bench autotune``: the batching auto-tuner against the best fixed setting of a grid.

Each workload runs in a fresh spawned process: one learner with its local actors (processes on
loopback). After the warm-up, every grid point (max_batch_size x deadline_ms) is staged in turn and
measured after ``settle_s``. The baseline is the fastest point whose action latency p99 meets the
target (when none does, the best by steps/s x target/p99, as the tuner ranks them; the fastest point
is reported too). A p99 is that of every message in the window (counted in log buckets; the worst
of its one-second p99s would grow with the window's length). The best point is measured again, for
``bracket_s``, just before and just after the tuner's run, and the mean of those two is the
yardstick: on shared cores the load drifts by more than 5% over minutes, and the grid's own figure
is the best of 20 noisy ones (biased up). For the run, the learner is set to batch
1 and deadline 0.1 ms and the tuner is switched on for as long as the whole grid took. Figures: the
tuner's steps/s over the second half of its run, the best grid point's (from the grid, and
bracketing the tuner), the ratios, the seconds until the tuner's throughput (10 s mean) first came
within 5% of its final level, and whether its p99 met the target there. Last, the tuner's final
setting and the best point are held in turn (A B B A), for a ratio that drift does not move.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import multiprocessing
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from aioseed.bench.children import ended, reported
from aioseed.bench.config import AutotuneBench, atari_run, cartpole_run
from aioseed.commands.run import RunConfig
from aioseed.server.batching.autotune import BatchingConfig
from aioseed.server.batching.latency import quantile_ms
from aioseed.server.config import StopConfig

BAD_START = (1, 0.1)


def workload(name: str) -> RunConfig:
    """The run of a named workload, with the auto-tuner off (the bench switches it on)."""
    if name == "pong":
        return atari_run()
    streams = {"cartpole-64": 64, "cartpole-1024": 1024}[name]
    run = cartpole_run()
    return dataclasses.replace(run, num_actors=2, envs_per_actor=streams // 2, envs_per_message=1)


def window(series: list[dict[str, float]], since: float, frames_per_step: int, latency_counts: np.ndarray) -> dict[str, float]:
    """Steps/s (env rows) over the snapshots after ``since``, and the action latency p99 of every
    message counted in ``latency_counts`` (the same window's)."""
    points = [p for p in series if p["time"] > since]
    if len(points) < 2:
        return {"steps_per_s": math.nan, "p99_ms": math.nan}
    steps = float(np.mean([p["charts/frames_per_s"] for p in points])) / frames_per_step
    return {"steps_per_s": steps, "p99_ms": quantile_ms(latency_counts, 99)}


def settle_time(times: list[float], rates: list[float], final: float, tolerance: float = 0.05) -> float:
    """Seconds from the start until the 10-point (10 s) rolling mean of ``rates`` first comes within
    ``tolerance`` of ``final`` (single seconds swing more than 5% on a shared machine; so do 10 s means
    later, with the host's other load, which is why this is not "stays within")."""
    rolling = [float(np.mean(rates[max(0, i - 9) : i + 1])) for i in range(len(rates))]
    return next((t for t, r in zip(times, rolling) if r >= (1 - tolerance) * final), math.nan)


async def final_against_best(
    hold: Callable[..., Awaitable[dict[str, float]]], final: dict[str, Any], best: dict[str, Any], seconds: float
) -> dict[str, Any] | None:
    """The tuner's final setting (A) against the best grid point (B), held A B B A for ``seconds``
    each: a drift that is linear over the four cancels out of the ratio of their sums."""
    if not seconds:
        return None
    a, b = (final["max_batch_size"], final["deadline_ms"]), (best["max_batch_size"], best["deadline_ms"])
    if a == b:
        return {"ratio": 1.0, "same_setting": True}
    rates = {a: [], b: []}
    for setting in (a, b, b, a):
        rates[setting].append((await hold(*setting, seconds))["steps_per_s"])
    return {
        "ratio": round(sum(rates[a]) / sum(rates[b]), 3),
        "final_steps_per_s": [round(r) for r in rates[a]],
        "best_steps_per_s": [round(r) for r in rates[b]],
    }


async def measure(run: RunConfig, bench: AutotuneBench) -> dict[str, Any]:
    from aioseed.commands.launchers import launch_actors
    from aioseed.compose.learner import build

    batching = BatchingConfig(auto=False, latency_target_ms=bench.latency_target_ms)
    config = dataclasses.replace(run.served_learner, batching=batching, stop=StopConfig(), metrics_every_s=1.0)
    learner = build(config)
    port = await learner.start()
    fps = learner.spec.frames_per_step
    result: dict[str, Any] = {}

    async def hold(size: int, deadline: float, seconds: float = bench.measure_s) -> dict[str, float]:
        learner.configure_batcher(size, deadline)
        await asyncio.sleep(bench.settle_s)
        since, counts = time.time(), learner.latency_counts()
        await asyncio.sleep(seconds)
        return window(learner.series(since), since, fps, learner.latency_counts() - counts)

    async with asyncio.TaskGroup() as group:
        serving = group.create_task(learner.run(), name="learner")
        stop_actors = await launch_actors(run.launch_strategy, run.actor_configs(port), learner, group)
        try:
            await asyncio.sleep(bench.warmup_s)
            grid = []
            started = time.time()
            for size in bench.batch_sizes:
                for deadline in bench.deadlines_ms:
                    grid.append({"max_batch_size": size, "deadline_ms": deadline, **await hold(size, deadline)})
            grid_s = time.time() - started
            feasible = [g for g in grid if g["p99_ms"] <= bench.latency_target_ms]
            # Ranked as the tuner ranks: steps/s among the points that meet the target; when none does,
            # steps/s x target/p99 (the fastest point overall is reported beside it).
            best = max(feasible or grid, key=lambda g: g["steps_per_s"] * (1 if feasible else bench.latency_target_ms / g["p99_ms"]))
            fastest = max(grid, key=lambda g: g["steps_per_s"])
            before = await hold(best["max_batch_size"], best["deadline_ms"], bench.bracket_s)
            learner.configure_batcher(*BAD_START)
            learner.set_batching_auto(True, "bench")
            start = time.time()
            await asyncio.sleep(grid_s / 2)
            half = learner.latency_counts()
            await asyncio.sleep(grid_s / 2)
            series, second_half = learner.series(start), learner.latency_counts() - half
            learner.set_batching_auto(False, "bench")
            final_setting = learner.settings()
            after = await hold(best["max_batch_size"], best["deadline_ms"], bench.bracket_s)
            abba = await final_against_best(hold, final_setting, best, bench.ab_s)
            bracket = (before["steps_per_s"] + after["steps_per_s"]) / 2
            times = [p["time"] - start for p in series]
            rates = [p["charts/frames_per_s"] / fps for p in series]
            final = window(series, start + grid_s / 2, fps, second_half)
            result = {
                "auto_steps_per_s": round(final["steps_per_s"]),
                "best_grid_steps_per_s": round(bracket),
                "ratio_vs_best_grid": round(final["steps_per_s"] / bracket, 3),
                "best_grid_before_after_steps_per_s": [round(before["steps_per_s"]), round(after["steps_per_s"])],
                "best_grid_in_grid_steps_per_s": round(best["steps_per_s"]),
                "final_setting_vs_best_grid_abba": abba,
                "ratio_vs_best_grid_in_grid": round(final["steps_per_s"] / best["steps_per_s"], 3),
                "seconds_to_within_5pct": round(settle_time(times, rates, final["steps_per_s"]), 1),
                "auto_p99_ms": round(final["p99_ms"], 1),
                "auto_p99_met": bool(final["p99_ms"] <= bench.latency_target_ms),
                "auto_final_setting": final_setting["max_batch_size"], "auto_final_deadline_ms": final_setting["deadline_ms"],
                "best_grid": {k: best[k] for k in ("max_batch_size", "deadline_ms")} | {"p99_ms": round(best["p99_ms"], 1)},
                "best_grid_met_target": bool(feasible),
                "fastest_grid": {k: fastest[k] for k in ("max_batch_size", "deadline_ms", "steps_per_s")} | {"p99_ms": round(fastest["p99_ms"], 1)},
                "ratio_vs_fastest_grid_in_grid": round(final["steps_per_s"] / fastest["steps_per_s"], 3),
                "auto_trace": [  # seconds, max_batch_size, deadline_ms, steps/s, p99 ms per metrics snapshot
                    [round(p["time"] - start, 1), int(p["batching/max_batch_size"]), p["batching/deadline_ms"],
                     round(p["charts/frames_per_s"] / fps), round(p["inference/latency_ms_p99"], 1)]
                    for p in series
                ],
                "grid_points": len(grid),
                "seconds_each": grid_s,
                "grid": [{k: (round(v, 1) if isinstance(v, float) else v) for k, v in g.items()} for g in grid],
            }
        finally:
            learner.request_stop()
            await stop_actors()
            await serving
    return result


def _measure_in_process(name: str, bench: AutotuneBench, results: multiprocessing.Queue) -> None:
    import uvloop

    from aioseed import log as logging_setup
    from aioseed.tf_start import start_tensorflow

    logging_setup.configure("warning")
    start_tensorflow()
    results.put(uvloop.run(measure(workload(name), bench)))


def main(bench: AutotuneBench) -> int:
    context = multiprocessing.get_context("spawn")
    for name in bench.workloads:
        results = context.Queue()
        process = context.Process(target=_measure_in_process, args=(name, bench, results), name=f"autotune-{name}")
        process.start()
        points = len(bench.batch_sizes) * len(bench.deadlines_ms)
        try:
            figures = reported(results, [process], bench.warmup_s + 3 * (points + 2) * (bench.settle_s + bench.measure_s) + 600)
        finally:
            ended(process)
        row = {"workload": name, "latency_target_ms": bench.latency_target_ms, **figures}
        sys.stdout.write((json.dumps(row) if bench.json else json.dumps(row, indent=2)) + "\n")
    return 0
