"""Sample-efficiency curves (rliable's): each setting's aggregate score against frames, with a
stratified-bootstrap 95% band over its runs, drawn over the frames every one of its runs reached.

Each run's curve (mean return over its return window, against frames) is interpolated onto a common grid;
the aggregate at each grid point is the mean of the runs' returns for one task's raw returns, and the IQM
of human-normalised scores over Atari games (rliable's recommendation where there are tasks to pool).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from aioseed.results.aggregate import Reference, Scores, bootstrap, matched, normalize
from aioseed.results.runs import Run

POINTS = 100
"""Grid points along the frames."""
REFERENCE_COLORS = ("firebrick", "dimgray", "darkorange")
"""Published scores' lines, apart from the settings' C0, C1, ..."""


@dataclasses.dataclass(frozen=True)
class Curves:
    """One setting's curves on its grid."""

    frames: np.ndarray
    """[POINTS]: from the latest first point of its runs to the earliest last one."""
    runs: np.ndarray
    """[runs, tasks, POINTS]: each run's score (human-normalised where the report is)."""
    point: np.ndarray
    low: np.ndarray
    high: np.ndarray
    """[POINTS] each: the aggregate and its 95% band."""


def aggregate_name(normalized: bool) -> str:
    return "IQM" if normalized else "Mean"


def efficiency(groups: Mapping[str, Sequence[Run]], data: Scores, reps: int, seed: int) -> dict[str, Curves]:
    """Each setting's curves, for the settings whose runs all have curves that overlap in frames."""
    from scipy import stats

    grids: dict[str, np.ndarray] = {}
    scores: dict[str, np.ndarray] = {}
    for label, runs in groups.items():
        per_task, _ = matched(label, runs, data.tasks)
        chosen = [run for task in data.tasks for run in per_task[task]]
        if any(not run.curve for run in chosen):
            continue
        start = max(run.curve[0].frames for run in chosen)
        end = min(run.curve[-1].frames for run in chosen)
        if end <= start:
            continue
        grids[label] = np.linspace(start, end, POINTS)
        columns = [[_interpolated(run, grids[label], data.normalized) for run in per_task[task]] for task in data.tasks]
        scores[label] = np.transpose(np.asarray(columns, np.float64), (1, 0, 2))  # [tasks, runs, P] -> [runs, tasks, P]
    if not scores:
        return {}

    def aggregate(matrix: np.ndarray) -> np.ndarray:
        flat = matrix.reshape(-1, matrix.shape[-1])
        return stats.trim_mean(flat, 0.25, axis=0) if data.normalized else flat.mean(axis=0)

    return {
        label: Curves(frames=grids[label], runs=scores[label], point=point, low=ranges[0], high=ranges[1])
        for label, (point, ranges) in bootstrap(scores, aggregate, reps, seed).items()
    }


def _interpolated(run: Run, frames: np.ndarray, normalized: bool) -> np.ndarray:
    xs = np.array([p.frames for p in run.curve], np.float64)
    ys = np.array([normalize(run, p.mean_return) if normalized else p.mean_return for p in run.curve], np.float64)
    return np.interp(frames, xs, ys)


def plot(curves: Mapping[str, Curves], data: Scores, references: Sequence[Reference], path: str) -> None:
    """Writes the settings' curves to ``path``: each aggregate with its band, over its runs' own curves (one
    task) or alone (several), and each reference as a dotted line."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for index, (label, found) in enumerate(curves.items()):
        color = f"C{index}"
        if len(data.tasks) == 1:
            for run in found.runs[:, 0]:
                axes.plot(found.frames, run, color=color, alpha=0.25, linewidth=0.8)
        axes.plot(found.frames, found.point, color=color, linewidth=2, label=f"{label} ({found.runs.shape[0]} runs)")
        axes.fill_between(found.frames, found.low, found.high, color=color, alpha=0.2)
    for index, reference in enumerate(references):
        color = REFERENCE_COLORS[index % len(REFERENCE_COLORS)]
        axes.axhline(reference.score, color=color, linestyle=":", linewidth=2, label=f"{reference.name} ({reference.score:g})")
    what = "human-normalised score" if data.normalized else f"return on {data.tasks[0]}"
    axes.set_xlabel("frames")
    axes.set_ylabel(f"{aggregate_name(data.normalized)} {what} (95% band)")
    axes.legend(loc="best", fontsize="small")
    axes.grid(alpha=0.3)
    figure.savefig(path, bbox_inches="tight")
    plt.close(figure)
