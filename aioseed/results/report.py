"""``aioseed report RUNS...``: a table of every setting's aggregate scores with 95% confidence
intervals, over tasks and seeds, and the usual plots (aggregate intervals; performance profiles where
there are enough runs; sample-efficiency curves where the runs have curves), from runs' logdirs, each setting
set against published scores where they are given."""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import sys
from typing import Annotated, Any, Literal

import tyro

from aioseed.results.aggregate import Interval, Reference, Scores, intervals, mean_t_interval, metric_names, profiles, scores
from aioseed.results.atari_scores import reference
from aioseed.results.efficiency import REFERENCE_COLORS, efficiency, plot
from aioseed.results.runs import Run, ScoreSource, group, logdirs, read_run

FEW_RUNS = 5
"""Runs per task under which a verdict against a reference says how few there were."""

SETTING_FIELDS = ("runs_per_task", "dropped_runs", "mean_t", "references")
"""A setting's entries in report.json that are not rliable's metrics (the table's columns)."""


@dataclasses.dataclass(frozen=True)
class ReportConfig:
    """Aggregate scores of runs over tasks and seeds, with stratified-bootstrap confidence intervals."""

    runs: Annotated[tuple[pathlib.Path, ...], tyro.conf.Positional]
    """Logdirs, or directories with logdirs below them (a sweep's directory)."""
    group_by: tuple[str, ...] = ()
    """Config keys that name a setting (a key's last parts suffice where they name one: impala.learning_rate); default: every key
    whose value differs between the runs, other than the seed, the env and the logdir."""
    source: ScoreSource = "auto"
    """A run's score: eval, its newest kept ``aioseed eval`` result (of the most frames); curve, the mean
    return at the end of its curve; auto: eval where one is kept, else curve."""
    protocol: str | None = None
    """Only evaluations of this protocol count (seed, machado, none)."""
    reference: tuple[str, ...] = ()
    """Published scores, NAME=SCORE in the report's units (CleanRL=2340), to set each setting's mean against: the
    report says whether the mean's 95% Student's t interval over runs lies above the score, holds it (level) or
    lies below (unknown for one run), and draws it."""
    reps: int = 2000
    """Bootstrap resamples per interval."""
    seed: int = 0
    """Seed of the bootstrap."""
    out: pathlib.Path | None = pathlib.Path("report")
    """Directory for report.json, aggregates.png, profiles.png and curves.png (None: print only)."""
    format: Literal["table", "json"] = "table"
    """How the result prints."""

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("name at least one logdir (or a directory of them)")
        if self.reps < 10:
            raise ValueError(f"reps must be >= 10, got {self.reps}")
        for text in self.reference:
            Reference.parse(text)  # a bad one is refused as the command line is read

    @property
    def references(self) -> list[Reference]:
        return [Reference.parse(text) for text in self.reference]


def report(config: ReportConfig) -> dict[str, Any]:
    # The curves are drawn only where the report is written.
    runs = [read_run(logdir, config.source, config.protocol, curve=config.out is not None) for logdir in logdirs(config.runs)]
    groups = group(runs, config.group_by)
    data = scores(groups)
    estimates = intervals(data, config.reps, config.seed)
    means = {label: mean_t_interval(matrix) for label, matrix in data.matrices.items()}
    result: dict[str, Any] = {
        "tasks": list(data.tasks),
        "scores": "human-normalised" if data.normalized else "raw returns",
        "confidence": 0.95,
        "reps": config.reps,
        "settings": {
            label: {
                "runs_per_task": int(data.matrices[label].shape[0]),
                "dropped_runs": data.dropped[label],
                **{name: dataclasses.asdict(interval) for name, interval in estimates[label].items()},
                "mean_t": {**_finite(dataclasses.asdict(means[label])), "method": "Student's t over runs (the verdicts')"},
                "references": {ref.name: {"score": ref.score, "mean": ref.verdict(means[label])} for ref in config.references},
            }
            for label in groups
        },
        "runs": [_describe(run, label) for label, members in groups.items() for run in members],
        "sources": sorted({run.source for run in runs}),
    }
    if config.out is not None:
        config.out.mkdir(parents=True, exist_ok=True)
        result["files"] = _plots(data, estimates, config)
        curves = efficiency(groups, data, config.reps, config.seed)
        if curves:
            plot(curves, data, config.references, str(config.out / "curves.png"))
            result["files"].append(str(config.out / "curves.png"))
        (config.out / "report.json").write_text(json.dumps(result, indent=1) + "\n")
        result["files"].append(str(config.out / "report.json"))
    return result


def _describe(run: Run, label: str) -> dict[str, Any]:
    found = reference(run.env)
    return {
        "setting": label, "logdir": str(run.logdir), "env": run.env, "seed": run.seed, "score": run.score,
        "hns": None if found is None else found.normalize(run.score), "frames": run.frames, "source": run.source,
    }


def _plots(data: Scores, estimates: dict[str, dict[str, Interval]], config: ReportConfig) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import numpy as np
    from matplotlib import pyplot as plt
    from rliable import plot_utils

    assert config.out is not None
    names = metric_names(data.normalized)
    points = {label: np.array([estimates[label][n].point for n in names]) for label in estimates}
    ranges = {label: np.array([[estimates[label][n].low for n in names], [estimates[label][n].high for n in names]]) for label in estimates}
    xlabel = "Human-normalised score" if data.normalized else f"Return on {data.tasks[0]}"
    figure, _ = plot_utils.plot_interval_estimates(
        points, ranges, metric_names=list(names), algorithms=list(estimates), xlabel=xlabel,
        xlabel_y_coordinate=-max(0.1, 1.2 / len(estimates)),  # rliable's -0.1 overlaps the ticks below a few rows
    )
    for axes, name in zip(figure.axes, names):
        for index, published in enumerate(config.references if name != "Optimality Gap" else ()):  # the gap is not in the scores' units
            axes.axvline(published.score, color=REFERENCE_COLORS[index % len(REFERENCE_COLORS)], linestyle=":", linewidth=2)
    written = [config.out / "aggregates.png"]
    figure.savefig(written[0], bbox_inches="tight")
    plt.close(figure)
    profile = profiles(data, config.reps, config.seed)
    if profile is not None:
        taus, fractions, bands = profile
        figure, axes = plt.subplots(figsize=(7, 4.5))
        plot_utils.plot_performance_profiles(fractions, taus, performance_profile_cis=bands, ax=axes, xlabel=f"{xlabel} (τ)")
        axes.legend(axes.get_lines()[: len(fractions)], list(fractions), loc="upper right")  # the curves, not their bands
        written.append(config.out / "profiles.png")
        figure.savefig(written[-1], bbox_inches="tight")
        plt.close(figure)
    return [str(path) for path in written]


def table(result: dict[str, Any]) -> str:
    """The report for a terminal: the settings' intervals, then each run."""
    first = next(iter(result["settings"].values()))
    names = [name for name in first if name not in SETTING_FIELDS]
    lines = [
        f"{len(result['runs'])} runs on {', '.join(result['tasks'])}: {result['scores']}, "
        f"point estimate [95% stratified-bootstrap interval, {result['reps']} resamples]",
        "",
    ]
    if len(result.get("sources", [])) > 1:  # an evaluation and a training curve measure different things
        lines[-1:] = [f"warning: the scores come from {len(result['sources'])} sources: {'; '.join(result['sources'])}", ""]
    width = max(len("setting"), *(len(label) for label in result["settings"]))
    columns = {name: max(len(name), *(len(_interval(setting[name])) for setting in result["settings"].values())) for name in names}
    lines.append(f"{'setting':<{width}}  runs  " + "  ".join(f"{name:<{columns[name]}}" for name in names).rstrip())
    for label, setting in result["settings"].items():
        cells = "  ".join(f"{_interval(setting[name]):<{columns[name]}}" for name in names).rstrip()
        dropped = f"  ({setting['dropped_runs']} runs left out to match tasks)" if setting["dropped_runs"] else ""
        lines.append(f"{label:<{width}}  {setting['runs_per_task']:>4}  {cells}{dropped}")
    if any(setting["references"] for setting in result["settings"].values()):
        lines += ["", "against published scores, the mean's 95% Student's t interval over runs:"]
    for label, setting in result["settings"].items():
        runs, mean = setting["runs_per_task"], setting["mean_t"]
        few = f" (over {runs} runs: the bootstrap intervals above are little more than their spread)" if runs < FEW_RUNS else ""
        for name, compared in setting["references"].items():
            if compared["mean"] == "unknown":
                why = "one run has" if runs < 2 else "scores that are not finite have"
                lines.append(f"{label}: {why} no interval to set against {name}'s {compared['score']:g}")
                continue
            said = f"{compared['mean']}{' with' if compared['mean'] == 'level' else ''} {name}'s {compared['score']:g}"
            lines.append(f"{label}: the mean {_interval(mean)} is {said}{few}")
    lines += ["", "runs:"]
    for run in result["runs"]:
        hns = "" if run["hns"] is None else f"  HNS {run['hns']:.3f}"
        lines.append(f"  {run['logdir']}  {run['env']}  seed {run['seed']}  score {run['score']:.3f}{hns}  at {run['frames']} frames, {run['source']}")
    if result.get("files"):
        lines += ["", "wrote: " + ", ".join(result["files"])]
    return "\n".join(lines) + "\n"


def _finite(values: dict[str, float]) -> dict[str, float | None]:
    """NaN as null: strict JSON has no NaN."""
    return {key: value if math.isfinite(value) else None for key, value in values.items()}


def _interval(values: dict[str, float]) -> str:
    return f"{values['point']:.3f} [{values['low']:.3f}, {values['high']:.3f}]"


def main(config: ReportConfig) -> int:
    result = report(config)
    sys.stdout.write(table(result) if config.format == "table" else json.dumps(result) + "\n")
    return 0
