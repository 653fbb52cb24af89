"""``aioseed bench time-to-score``: wall-clock from ``aioseed run``'s launch to a return target, seed after seed.

Each seed is a real ``aioseed run --config LOGDIR/seedN.toml`` child process (its output in
LOGDIR/seedN.log), started from a fresh logdir. The bench reads the run's curve from its TensorBoard logs
every ``poll_s`` (only the events new since the last read) and stops the child (SIGTERM: an ordered
shutdown, as a sweep stops its trials) once the target has held for ``hold_rows`` rows; the figures come
from the curve itself, so a late poll costs training time but changes no figure.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time
from typing import Any

import structlog

from aioseed.bench.atari import components, compute_bound
from aioseed.bench.children import ChildFailed
from aioseed.bench.learning_curve import run_title, write_png
from aioseed.bench.recipe_config import TimeToScoreBench
from aioseed.commands.run import RunConfig
from aioseed.compose import config_file
from aioseed.errors import InvalidInput
from aioseed.results.curves import CurveTail, Point, reached_and_held, write_csv
from aioseed.server.config import ConsoleConfig, StopConfig
from aioseed.sweep.trial import stop_run

log = structlog.get_logger()

def seed_run(bench: TimeToScoreBench, seed: int, logdir: pathlib.Path) -> RunConfig:
    """The run of one seed: the bench's, with the seed, the logdir, the return window and the budgets; no
    console (nothing else should share the cores), progress as log lines."""
    learner = dataclasses.replace(
        bench.run.learner,
        seed=seed,
        logdir=logdir,
        return_window=bench.return_window,
        stop=StopConfig(after_frames=bench.max_frames, after_seconds=bench.max_minutes * 60.0),
        console=ConsoleConfig(enabled=False),
        display="lines",
    )
    return dataclasses.replace(bench.run, learner=learner)


BATCH_TAG = "batcher/batch_size"


def run_seed(bench: TimeToScoreBench, seed: int) -> tuple[dict[str, Any], list[Point]]:
    """Launches one seed's ``aioseed run``, stops it once the target has held, and reads its figures and curve."""
    root = bench.root
    logdir = root / f"seed{seed}"
    if (logdir / "tensorboard").exists() or (logdir / "checkpoints").exists():
        raise InvalidInput(f"{logdir} holds a run already (a resumed run's time from launch means nothing): give another --logdir or remove it")
    run = seed_run(bench, seed, logdir)
    root.mkdir(parents=True, exist_ok=True)
    config_path = root / f"seed{seed}.toml"
    command = [sys.executable, "-m", "aioseed", "run", "--config", str(config_path)]
    config_path.write_text(config_file.dumps(run, "run", f"aioseed bench time-to-score, seed {seed}: {' '.join(command[2:])}"))
    log.info("time_to_score_seed", seed=seed, logdir=str(logdir), command=" ".join(command[2:]))
    tail = CurveTail(logdir / "tensorboard", bench.return_window, (BATCH_TAG,))
    launched = time.time()
    with open(root / f"seed{seed}.log", "w") as output:
        # Its own session: a Ctrl-C on the bench reaches the child once, through ``stop_run``, not twice.
        child = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
        stopped = False
        try:
            while not stopped and child.poll() is None:
                try:
                    child.wait(bench.poll_s)
                except subprocess.TimeoutExpired:
                    stopped = reached_and_held(tail.points(), bench.target_return, bench.hold_rows, bench.return_window) is not None
        finally:
            if child.poll() is None:
                stop_run(child)
    if child.returncode != 0 and not stopped:
        raise ChildFailed(f"seed {seed}'s aioseed run exited with {child.returncode}; its output is in {root / f'seed{seed}.log'}")
    points = tail.points()  # the events written since the last poll, up to the shutdown's
    return seed_result(bench, seed, run, launched, points, tail), points


def seed_result(bench: TimeToScoreBench, seed: int, run: RunConfig, launched: float, points: list[Point], tail: CurveTail) -> dict[str, Any]:
    """One seed's figures from its curve; writes curve.csv and curve.png into its logdir."""
    logdir = run.learner.logdir
    assert logdir is not None
    start = tail.start
    if not points or start is None:
        raise ChildFailed(f"seed {seed}'s run wrote no curve under {logdir / 'tensorboard'}")
    reached = reached_and_held(points, bench.target_return, bench.hold_rows, bench.return_window)
    write_csv(points, logdir / "curve.csv")
    write_png(points, logdir / "curve.png", run_title(run.learner, bench.preset), bench.target_return, bench.max_frames, bench.return_window)
    first, last = points[0], points[-1]
    training_s = last.seconds - first.seconds
    batches = [b for b in tail.values(BATCH_TAG) if not math.isnan(b)]
    return {
        "seed": seed,
        "reached": reached is not None,
        "target_return": bench.target_return,
        "minutes_to_target": None if reached is None else round((start + reached.seconds - launched) / 60, 2),
        "frames_to_target": None if reached is None else reached.frames,
        "start_up_s": round(start - launched, 1),
        "frames": last.frames,
        "minutes": round((start + last.seconds - launched) / 60, 2),
        "frames_per_s": round((last.frames - first.frames) / training_s) if training_s > 0 else None,
        "best_return": round(max(p.mean_return for p in points), 2),
        "mean_inference_batch": round(statistics.fmean(batches), 1) if batches else None,
        "logdir": str(logdir),
        "csv": str(logdir / "curve.csv"),
        "png": str(logdir / "curve.png"),
    }


def aggregate(bench: TimeToScoreBench, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """The seeds together: how many reached, the median time and frames to the target of those that did,
    and ``aioseed report``'s 95% intervals of the final scores (LOGDIR/report)."""
    from aioseed.results.report import ReportConfig, report

    reached = [s for s in seeds if s["reached"]]
    result: dict[str, Any] = {
        "preset": bench.preset,
        "env": bench.run.learner.env,
        "seeds": [s["seed"] for s in seeds],
        "reached": f"{len(reached)} of {len(seeds)}",
        "median_minutes_to_target": statistics.median(s["minutes_to_target"] for s in reached) if reached else None,
        "median_frames_to_target": statistics.median(s["frames_to_target"] for s in reached) if reached else None,
    }
    rates = [s["frames_per_s"] for s in seeds if s["frames_per_s"]]
    result["median_frames_per_s"] = statistics.median(rates) if rates else None
    summary = report(ReportConfig(runs=tuple(pathlib.Path(s["logdir"]) for s in seeds), source="curve", out=bench.root / "report"))
    result["final_scores"] = {"scores": summary["scores"], **summary["settings"]}  # one setting: the preset's
    result["report"] = str(bench.root / "report" / "report.json")
    return result


def split(bench: TimeToScoreBench, seeds: list[dict[str, Any]]) -> dict[str, Any]:
    """The components alone on these cores at the runs' mean inference batch, the bound they imply, and
    each seed's ratio to it."""
    batches = [s["mean_inference_batch"] for s in seeds if s["mean_inference_batch"]]
    parts = components(bench.run, statistics.fmean(batches) if batches else 1.0, bench.component_s)
    cores = os.cpu_count() or 1
    bound = compute_bound(parts, cores)
    return {
        **{key: round(value, 4) for key, value in parts.items()},
        "cores": cores,
        "bound_frames_per_s": round(bound),
        "ratio_vs_bound": [round(s["frames_per_s"] / bound, 3) if s["frames_per_s"] else None for s in seeds],
    }


def write_seeds_png(bench: TimeToScoreBench, seeds: list[dict[str, Any]], curves: list[list[Point]], path: pathlib.Path) -> None:
    """Every seed's curve on one plot, each marked where the target held, with the target and the budget."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    for result, points in zip(seeds, curves):
        label = f"seed {result['seed']}" + (f": held from {result['frames_to_target'] / 1e6:.2f}M, {result['minutes_to_target']:.1f} min" if result["reached"] else ": not reached")
        (line,) = axes.plot([p.frames / 1e6 for p in points], [p.mean_return for p in points], label=label)
        if result["reached"]:
            axes.plot(result["frames_to_target"] / 1e6, bench.target_return, "o", color=line.get_color())
    axes.axhline(bench.target_return, color="tab:green", linestyle="--", label=f"target {bench.target_return:+g}")
    axes.axvline(bench.max_frames / 1e6, color="tab:gray", linestyle=":", label=f"{bench.max_frames / 1e6:g}M frames")
    axes.set(xlabel="env frames (millions)", ylabel=f"mean return (last {bench.return_window} episodes)", title=run_title(dataclasses.replace(bench.run.learner, seed=None), bench.preset))
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right", fontsize="small")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def main(bench: TimeToScoreBench) -> int:
    seeds, curves = [], []
    for seed in bench.seeds:
        result, points = run_seed(bench, seed)
        seeds.append(result)
        curves.append(points)
        _print(result, bench.json)
    write_seeds_png(bench, seeds, curves, bench.root / "seeds.png")
    result = aggregate(bench, seeds)
    result["png"] = str(bench.root / "seeds.png")
    if bench.component_s > 0:
        result.update(split(bench, seeds))
    _print(result, bench.json)
    return 0


def _print(result: dict[str, Any], one_line: bool) -> None:
    sys.stdout.write((json.dumps(result) if one_line else json.dumps(result, indent=2)) + "\n")
    sys.stdout.flush()
