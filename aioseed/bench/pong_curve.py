"""``aioseed bench pong-curve``: V-trace on Pong across sessions; frames vs mean return as CSV and PNG.

Each invocation trains for ``minutes`` with ``aioseed run``'s set-up; the
learner resumes from the latest checkpoint in its logdir, frame counter
included. The curve is then rebuilt from the run's TensorBoard logs, which span
every session, so a session cut short (even killed) only loses the frames since
its last checkpoint.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import pathlib
import sys

import structlog

from aioseed.bench.config import PongCurveBench

log = structlog.get_logger()

RETURN_TAG = "charts/return"


@dataclasses.dataclass(frozen=True)
class Point:
    frames: int
    wall_time: float
    mean_return: float


def read_curve(tensorboard_dir: pathlib.Path, tag: str = RETURN_TAG) -> list[Point]:
    """The ``tag`` scalar against frames over all sessions' event files, in frame order.

    Where sessions overlap (a resumed session replays the frames after the last
    checkpoint), the later session's points win.
    """
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util

    if not tensorboard_dir.is_dir():
        return []
    accumulator = event_accumulator.EventAccumulator(
        str(tensorboard_dir), size_guidance={event_accumulator.TENSORS: 0}
    )
    accumulator.Reload()
    if tag not in accumulator.Tags()[event_accumulator.TENSORS]:
        return []
    points = [
        Point(event.step, event.wall_time, float(tensor_util.make_ndarray(event.tensor_proto)))
        for event in accumulator.Tensors(tag)
    ]
    kept: list[Point] = []
    for point in sorted(points, key=lambda p: p.wall_time, reverse=True):
        if not kept or point.frames < kept[-1].frames:
            kept.append(point)
    return [p for p in reversed(kept) if not math.isnan(p.mean_return)]


def write_csv(points: list[Point], path: pathlib.Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["frames", "wall_time", "mean_return"])
        for p in points:
            writer.writerow([p.frames, f"{p.wall_time:.3f}", f"{p.mean_return:.3f}"])


def write_png(points: list[Point], path: pathlib.Path, target_return: float, target_frames: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    axes.plot([p.frames / 1e6 for p in points], [p.mean_return for p in points], label="mean return (100 episodes)")
    axes.axhline(target_return, color="tab:green", linestyle="--", label=f"target {target_return:+g}")
    axes.axvline(target_frames / 1e6, color="tab:gray", linestyle=":", label=f"{target_frames / 1e6:g}M frames")
    axes.set(xlabel="emulator frames (millions)", ylabel="mean episode return", title="aioseed V-trace on Pong")
    axes.set_ylim(-21.5, 21.5)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def summarize(points: list[Point], target_return: float) -> dict[str, float | int | None]:
    reached = next((p.frames for p in points if p.mean_return >= target_return), None)
    return {
        "frames": points[-1].frames if points else 0,
        "mean_return": points[-1].mean_return if points else None,
        "best_return": max(p.mean_return for p in points) if points else None,
        "frames_to_target": reached,
        "target_return": target_return,
    }


def train(bench: PongCurveBench) -> None:
    import uvloop

    from aioseed.launch import train_locally

    learner = dataclasses.replace(
        bench.run.learner, stop_after_frames=bench.target_frames, stop_after_seconds=bench.minutes * 60.0
    )
    summary = uvloop.run(train_locally(dataclasses.replace(bench.run, learner=learner)))
    log.info("pong_curve_session", frames=summary.frames, mean_return=round(summary.mean_return, 2))


def main(bench: PongCurveBench) -> int:
    logdir = bench.run.learner.logdir
    if logdir is None:
        raise SystemExit("bench pong-curve needs a logdir: it resumes from checkpoints there")
    points = read_curve(logdir / "tensorboard")
    if not bench.plot_only and (not points or points[-1].frames < bench.target_frames):
        train(bench)
        points = read_curve(logdir / "tensorboard")
    if not points:
        raise SystemExit(f"no {RETURN_TAG} summaries under {logdir / 'tensorboard'} yet")
    write_csv(points, logdir / "curve.csv")
    write_png(points, logdir / "curve.png", bench.target_return, bench.target_frames)
    result = summarize(points, bench.target_return)
    result.update(csv=str(logdir / "curve.csv"), png=str(logdir / "curve.png"))
    print(json.dumps(result), file=sys.stdout, flush=True)
    return 0
