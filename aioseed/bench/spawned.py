"""``aioseed run`` in a fresh spawned process, for benchmarks that time whole runs."""

from __future__ import annotations

import dataclasses
import multiprocessing

from aioseed.bench.children import ChildFailed, ended, reported
from aioseed.commands.run import RunConfig, RunSummary


def _one_run(config: RunConfig, results: multiprocessing.Queue) -> None:
    import uvloop

    from aioseed import log as logging_setup
    from aioseed.commands.run import train_locally
    from aioseed.tf_start import start_tensorflow

    logging_setup.configure("warning")
    start_tensorflow()
    quiet = dataclasses.replace(config, learner=dataclasses.replace(config.learner, display="lines"))  # the bench prints
    results.put(uvloop.run(train_locally(quiet)))


def run_in_process(config: RunConfig, timeout_s: float) -> RunSummary:
    """Trains as ``aioseed run`` would in a new process (fresh interpreter and TensorFlow)."""
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    process = context.Process(target=_one_run, args=(config, results), name="aioseed-run")
    process.start()
    try:
        summary: RunSummary = reported(results, [process], timeout_s + 120)
    finally:
        ended(process)
    return summary


def timed_history(summary: RunSummary) -> list[dict[str, float]]:
    """The snapshots of a run a bench stopped by time, up to that stop: not the shutdown's drain, in which the
    actors are ended and few frames come. ChildFailed for a run that stopped otherwise (its actors exited, say):
    its rate would read as a figure."""
    if summary.stop_reason != "time" or summary.stop_time is None:
        raise ChildFailed(f"the measured run stopped early ({summary.stop_reason}), at {summary.frames} frames; its log is above")
    return [point for point in summary.history if point["time"] <= summary.stop_time]
