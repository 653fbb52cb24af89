"""``aioseed bench serve``: ``aioseed serve`` against ``aioseed learner`` with training paused, in one run.

Both serve the same CartPole checkpoint to the same client processes (``bench transport``'s clients), whose
streams are evaluation envs: both act on every row and store none, so the learner's paused trainer never
holds them back. Trials alternate between the two servers; the figures are medians.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

from aioseed.bench.load_config import ServeBench
from aioseed.bench.transport import Trial, run_trial
from aioseed.server.batching.batcher import BatcherConfig

SERVERS = ("serve", "paused")


def trained_run(directory: pathlib.Path) -> pathlib.Path:
    """A CartPole run of 2,000 frames (its checkpoint is what both servers load)."""
    logdir = directory / "run"
    command = [sys.executable, "-m", "aioseed", "run", "--learner.logdir", str(logdir), "--learner.stop.after-frames", "2000",
               "--learner.console.port", "0", "--num-actors", "1", "--envs-per-actor", "8"]
    subprocess.run(command, check=True, capture_output=True)
    return logdir


def main(config: ServeBench) -> int:
    with tempfile.TemporaryDirectory() as scratch:
        logdir = config.checkpoint or trained_run(pathlib.Path(scratch))
        paused = pathlib.Path(scratch) / "paused"  # the learner writes config.toml and a last checkpoint: not into the run
        shutil.copytree(logdir, paused)
        batcher = BatcherConfig(max_batch_size=max(config.max_batch_size, config.rows_per_message), deadline_ms=config.deadline_ms)
        results: dict[str, list[dict]] = {server: [] for server in SERVERS}
        for _ in range(config.repeats):
            for server in SERVERS:
                checkpoint = str(logdir if server == "serve" else paused)
                trial = Trial(
                    server=server, streams=config.streams, k=config.rows_per_message, seconds=config.seconds, client_processes=1,
                    batcher=batcher, checkpoint=checkpoint, evaluation=True,
                )
                results[server].append(run_trial(trial))
    row: dict[str, object] = {"streams": config.streams, "rows_per_message": config.rows_per_message, "repeats": config.repeats}
    for server, trials in results.items():
        steps = [t["round_trips_per_s"] * config.rows_per_message for t in trials]
        per_cpu = [t["round_trips_per_s"] * config.seconds * config.rows_per_message / t["server_cpu_s"] for t in trials]
        row[f"{server}_steps_per_s"] = round(statistics.median(steps))
        row[f"{server}_steps_per_cpu_s"] = round(statistics.median(per_cpu))
        row[f"{server}_p99_ms"] = round(statistics.median(t["p99_ms"] for t in trials), 2)
    row["ratio_steps_per_s"] = round(row["serve_steps_per_s"] / max(row["paused_steps_per_s"], 1), 3)
    row["ratio_steps_per_cpu_s"] = round(row["serve_steps_per_cpu_s"] / max(row["paused_steps_per_cpu_s"], 1), 3)
    if config.json:
        sys.stdout.write(json.dumps(row) + "\n")
    else:
        sys.stdout.write(
            f"{config.streams} evaluation streams of {config.rows_per_message} rows, medians of {config.repeats}:\n"
            f"aioseed serve            {row['serve_steps_per_s']:>8} steps/s  {row['serve_steps_per_cpu_s']:>8} per server CPU-s"
            f"  p99 {row['serve_p99_ms']} ms\n"
            f"learner, training paused {row['paused_steps_per_s']:>8} steps/s  {row['paused_steps_per_cpu_s']:>8} per server CPU-s"
            f"  p99 {row['paused_p99_ms']} ms\n"
            f"serve / learner: {row['ratio_steps_per_s']} (steps/s), {row['ratio_steps_per_cpu_s']} (per CPU-s)\n"
        )
    return 0
