"""Aggregates over tasks and seeds with rliable (Agarwal et al. 2021, "Deep RL at the Edge of the
Statistical Precipice"): IQM, median, mean and optimality gap, each with a stratified-bootstrap 95%
confidence interval, and performance profiles.

Scores are human-normalised where every task is an Atari game with reference scores; raw scores are
aggregated only over a single task (raw scores of different envs have no common scale).

A verdict against a published score reads the mean's Student's t interval over runs instead: a percentile
bootstrap of a few runs covers the true mean far less often than it says (about 50% of the time over 2 runs,
75% over 3, 90% over 10), and over one run it is a point.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Literal

import numpy as np

from aioseed.errors import InvalidInput
from aioseed.results.atari_scores import reference
from aioseed.results.runs import Run

MIN_PROFILE_SCORES = 3
"""Runs x tasks a setting needs before its performance profile is drawn."""


@dataclasses.dataclass(frozen=True)
class Interval:
    point: float
    low: float
    high: float


@dataclasses.dataclass(frozen=True)
class Reference:
    """A published score, in the report's units, to set each setting's interval against: ``CleanRL=2340``."""

    name: str
    score: float

    @classmethod
    def parse(cls, text: str) -> Reference:
        name, equals, value = text.partition("=")
        try:
            score = float(value)
        except ValueError:
            score = math.nan
        if not equals or not name.strip() or not math.isfinite(score):
            raise InvalidInput(f"--reference {text!r}: give NAME=SCORE, e.g. CleanRL=2340")
        return cls(name.strip(), score)

    def verdict(self, interval: Interval) -> Literal["above", "level", "below", "unknown"]:
        """above: ``interval`` lies wholly above the score; below: wholly below; level: it holds the score;
        unknown: there is no interval (one run)."""
        if not (math.isfinite(interval.low) and math.isfinite(interval.high)):
            return "unknown"
        if interval.low > self.score:
            return "above"
        return "below" if interval.high < self.score else "level"


@dataclasses.dataclass(frozen=True)
class Scores:
    """Each setting's scores as rliable takes them: ``[runs, tasks]``, tasks in ``tasks`` order."""

    matrices: dict[str, np.ndarray]
    tasks: tuple[str, ...]
    normalized: bool
    """Human-normalised (every task an Atari game); else raw returns of one task."""
    dropped: dict[str, int]
    """Runs left out per setting so that every task has as many runs as its fewest."""


def scores(groups: Mapping[str, Sequence[Run]]) -> Scores:
    tasks = tuple(sorted({run.env for runs in groups.values() for run in runs}))
    normalized = all(reference(task) is not None for task in tasks)
    if not normalized and len(tasks) > 1:
        raise InvalidInput(
            f"raw returns of {', '.join(tasks)} have no common scale (only Atari games have reference scores): report one env at a time"
        )
    matrices, dropped = {}, {}
    for label, runs in groups.items():
        per_task, dropped[label] = matched(label, runs, tasks)
        columns = [[normalize(r, r.score) if normalized else r.score for r in per_task[task]] for task in tasks]
        matrices[label] = np.asarray(columns, np.float64).T
    return Scores(matrices=matrices, tasks=tasks, normalized=normalized, dropped=dropped)


def matched(label: str, runs: Sequence[Run], tasks: Sequence[str]) -> tuple[dict[str, list[Run]], int]:
    """A setting's runs of each task, by seed, as many of each task as of its fewest (rliable's ``[runs, tasks]``),
    and how many were left out."""
    per_task = {task: sorted((r for r in runs if r.env == task), key=lambda r: (r.seed is None, r.seed or 0, str(r.logdir))) for task in tasks}
    missing = [task for task, found in per_task.items() if not found]
    if missing:
        raise InvalidInput(f"setting {label!r} has no run of {', '.join(missing)}: every setting needs every task")
    count = min(len(found) for found in per_task.values())
    return {task: found[:count] for task, found in per_task.items()}, sum(len(found) - count for found in per_task.values())


def normalize(run: Run, value: float) -> float:
    """``value``, a return of ``run``'s game, human-normalised."""
    found = reference(run.env)
    assert found is not None
    return found.normalize(value)


def metric_names(normalized: bool) -> tuple[str, ...]:
    return ("IQM", "Median", "Mean", "Optimality Gap") if normalized else ("IQM", "Median", "Mean")


def intervals(data: Scores, reps: int, seed: int) -> dict[str, dict[str, Interval]]:
    """Every setting's metrics with stratified-bootstrap 95% intervals (``reps`` resamples, seeded)."""
    from rliable import metrics

    names = metric_names(data.normalized)

    def compute(matrix: np.ndarray) -> np.ndarray:
        values = [metrics.aggregate_iqm(matrix), metrics.aggregate_median(matrix), metrics.aggregate_mean(matrix)]
        if data.normalized:
            values.append(metrics.aggregate_optimality_gap(matrix))
        return np.array(values)

    estimates = {}
    for label, (points, ranges) in bootstrap(data.matrices, compute, reps, seed).items():
        estimates[label] = {name: Interval(float(points[i]), float(ranges[0, i]), float(ranges[1, i])) for i, name in enumerate(names)}
    return estimates


def bootstrap(
    matrices: Mapping[str, np.ndarray], func: Callable[[np.ndarray], np.ndarray], reps: int, seed: int
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """rliable's stratified-bootstrap 95% interval of ``func`` for each ``[runs, tasks, ...]`` matrix: (point,
    [low, high]). Each setting draws its own resamples from ``seed``, so that its interval does not depend on the
    settings beside it."""
    from rliable import library

    out = {}
    for label, matrix in matrices.items():
        with warnings.catch_warnings(), numpy_global_seed(seed):  # rliable hands arch a RandomState, which arch 7 deprecates
            warnings.simplefilter("ignore", FutureWarning)
            points, ranges = library.get_interval_estimates({label: matrix}, func, reps=reps, random_state=np.random.RandomState(seed))
        out[label] = (points[label], ranges[label])
    return out


@contextlib.contextmanager
def numpy_global_seed(seed: int) -> Iterator[None]:
    """NumPy's global generator seeded for the block, and as it was after. rliable 1.2's stratified bootstrap draws
    its resamples from it (``np.random.choice``), not from the ``random_state`` it is given."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def mean_t_interval(matrix: np.ndarray, confidence: float = 0.95) -> Interval:
    """The mean of a ``[runs, tasks]`` matrix with Student's t interval over the runs (each run's mean over
    the tasks); NaN bounds for a single run."""
    from scipy import stats

    per_run = matrix.mean(axis=1)
    point = float(per_run.mean())
    if len(per_run) < 2:
        return Interval(point, math.nan, math.nan)
    half = float(stats.t.ppf(0.5 + confidence / 2, len(per_run) - 1) * per_run.std(ddof=1) / math.sqrt(len(per_run)))
    return Interval(point, point - half, point + half)


def profiles(data: Scores, reps: int, seed: int, points: int = 101) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]] | None:
    """(τ values, each setting's fraction of scores above τ, its 95% band), or None when some setting has
    fewer than ``MIN_PROFILE_SCORES`` scores."""
    from rliable import library

    if any(m.size < MIN_PROFILE_SCORES for m in data.matrices.values()):
        return None
    every = np.concatenate([m.ravel() for m in data.matrices.values()])
    low, high = float(every.min()), float(every.max())
    taus = np.linspace(low, high if high > low else low + 1.0, points)
    with numpy_global_seed(seed):
        fractions, bands = library.create_performance_profile(data.matrices, taus, reps=reps)
    return taus, fractions, bands
