"""``aioseed bench streams``: thousands of concurrent actor streams against one real learner.

The learner serves CartPole with V-trace's MLP and trains for real; client
processes hold the streams, each a K-row actor stepping as fast as it is
answered. A run at ``baseline_streams`` comes first, so the figure at N
streams is printed next to a baseline measured the same way, on the same
machine, in the same invocation.
"""

from __future__ import annotations

import json
import sys

import numpy as np

from aioseed.bench.load_config import StreamsBench
from aioseed.bench.transport import Trial, run_trial
from aioseed.server.batching.batcher import BatcherConfig


def measure(config: StreamsBench, streams: int) -> dict[str, float | int]:
    """One trial of ``streams`` concurrent streams; the figures the issue asks for."""
    batcher = BatcherConfig(max_batch_size=max(config.max_batch_size, config.rows_per_message), deadline_ms=config.deadline_ms)
    trial = Trial(
        server="learner",
        streams=streams,
        k=config.rows_per_message,
        seconds=config.seconds,
        client_processes=min(config.client_processes, streams),
        batcher=batcher,
        agent="mlp",
        warmup_s=config.warmup_s,
    )
    result = run_trial(trial)
    per_stream = result["per_stream"]
    server = result["batching"]
    rss = np.array([mib for at, mib in server["rss"] if at >= config.warmup_s] or [np.nan])
    return {
        "streams": streams,
        "rows_per_message": config.rows_per_message,
        "steps_per_s": round(result["round_trips_per_s"] * config.rows_per_message),
        "p50_ms": round(result["p50_ms"], 2),
        "p99_ms": round(result["p99_ms"], 2),
        "fairness_p99_over_p50": round(float(np.percentile(per_stream, 99) / max(np.percentile(per_stream, 50), 1)), 3),
        "starved_streams": int((per_stream == 0).sum()),
        "min_round_trips": int(per_stream.min()),
        "rss_mib": round(float(np.nanmax(rss)), 1),
        "rss_after_warmup_mib": round(float(rss[0]), 1),
        "rss_growth_after_warmup": round(float((rss[-1] - rss[0]) / rss[0]), 4),
        "open_fds": server["open_fds"],
        "train_steps": server["train_steps"],
        "mean_batch": round(server["batcher/batch_size"], 1),
        "seconds": config.seconds,
    }


def main(config: StreamsBench) -> int:
    baseline = measure(config, config.baseline_streams) if config.baseline_streams else None
    row = measure(config, config.streams)
    if baseline is not None:
        row["baseline_streams"] = baseline["streams"]
        row["baseline_steps_per_s"] = baseline["steps_per_s"]
        row["ratio_vs_baseline"] = round(row["steps_per_s"] / max(baseline["steps_per_s"], 1), 3)
    sys.stdout.write((json.dumps(row) if config.json else json.dumps(row, indent=2)) + "\n")
    return 0
