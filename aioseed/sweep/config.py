"""A sweep file: the study (name, storage, sampler, pruner), the seeds, the base ``aioseed run`` config
and the keys searched. docs/reproducibility.md shows one; every mistake names the file and the key."""

from __future__ import annotations

import dataclasses
import math
import pathlib
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from aioseed.compose import config_file

Sampler = Literal["grid", "random", "tpe"]
Pruner = Literal["none", "median", "asha"]


@dataclasses.dataclass(frozen=True)
class SweepConfig:
    """Search ``aioseed run``'s config keys and seeds on an Optuna study: each trial is one run process."""

    config: pathlib.Path
    """The sweep file (TOML): [sweep], [run], and [grid] or [space]."""
    report: bool = True
    """Print ``aioseed report``'s table over the trials when the study is done."""
    workers: int = 1
    """Trials run here at once. More than 1 pays where one run leaves the cores idle part of the time (a 1-env
    SAC run waits on each step's inference: two on 2 cores made 1.25x the updates of one); each run is slower."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")


@dataclasses.dataclass(frozen=True)
class Distribution:
    """A key's range for the random and TPE samplers: ``choices``, or ``low``..``high`` (``log``: sampled
    on a log scale; ``integer``: whole numbers)."""

    choices: tuple[Any, ...] = ()
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A parsed sweep file."""

    source: pathlib.Path
    name: str
    directory: pathlib.Path
    """Each trial's logdir is DIRECTORY/<its setting>/seed-<seed>; the default storage lives here."""
    storage: str
    """Optuna storage URL: sqlite:///... on one machine, a database server's URL for machines that join."""
    sampler: Sampler
    trials: int
    """Settings tried by the random and TPE samplers (grid: every point); each runs once per seed."""
    seeds: tuple[int, ...]
    pruner: Pruner
    report_every_frames: int
    """The curve is reported to the pruner at every multiple of this many frames."""
    preset: str
    run: Mapping[str, Any]
    """The [run] table: ``aioseed run --config``'s, the base of every trial."""
    grid: Mapping[str, tuple[Any, ...]]
    space: Mapping[str, Distribution]
    budget_frames: int
    """[run.learner.stop] after_frames: every trial's length."""
    heartbeat_s: int = 30
    """A running trial's heartbeat in the storage; one silent for twice this long (its sweep died) is
    failed and queued again."""
    keep: pathlib.Path | None = None
    """Where each finished trial is kept as a result to commit (KEEP/<setting>/seed-<seed>: config.toml, curve.csv,
    evaluations; ``aioseed.results.kept``). A pair kept there counts as done, here or on another machine that
    carries the directory: it is not run again, and the report reads it."""

    @property
    def keys(self) -> tuple[str, ...]:
        """The searched keys (dotted run keys: ``learner.impala.learning_rate``)."""
        return tuple(self.grid or self.space)


SWEEP_KEYS = {
    "name", "directory", "storage", "sampler", "trials", "seeds", "pruner", "report_every_frames", "preset", "heartbeat_s", "keep",
}


def read_sweep(path: pathlib.Path) -> Sweep:
    data = config_file.read(path)
    unknown = set(data) - {"sweep", "run", "grid", "space"}
    if unknown:
        raise config_file.ConfigFileError(f"{path}: unknown table(s) {', '.join(sorted(unknown))} (known: sweep, run, grid, space)")
    table = dict(data.get("sweep", {}))
    if set(table) - SWEEP_KEYS:
        raise config_file.ConfigFileError(f"{path}: unknown key(s) sweep.{', sweep.'.join(sorted(set(table) - SWEEP_KEYS))}")
    sampler = table.get("sampler", "grid")
    pruner = table.get("pruner", "median")
    _check(path, "sweep.sampler", sampler in ("grid", "random", "tpe"), "grid, random or tpe")
    _check(path, "sweep.pruner", pruner in ("none", "median", "asha"), "none, median or asha")
    name = str(table.get("name", path.stem))
    _check(path, "sweep.directory", isinstance(table.get("directory", ""), str), "a directory (a string)")
    directory = pathlib.Path(table.get("directory", pathlib.Path("sweeps") / name))
    seeds = table.get("seeds", [0])
    _check(path, "sweep.seeds", isinstance(seeds, list) and seeds and all(isinstance(s, int) for s in seeds), "a list of integers")
    _check(path, "sweep.seeds", len(set(seeds)) == len(seeds), "distinct seeds")
    grid = {k: tuple(v) if isinstance(v, list) else v for k, v in data.get("grid", {}).items()}
    space = {k: _distribution(path, k, v) for k, v in data.get("space", {}).items()}
    if sampler == "grid":
        _check(path, "grid", bool(grid) and not space, "a [grid] table (key = [values]) and no [space] for sampler grid")
        for key, values in grid.items():
            distinct = isinstance(values, tuple) and len(values) > 0 and len(set(map(repr, values))) == len(values)
            _check(path, f"grid.{key}", distinct, "a list of distinct values")
    else:
        _check(path, "space", bool(space) and not grid, f"a [space] table and no [grid] for sampler {sampler}")
    trials = table.get("trials", 8)
    _check(path, "sweep.trials", isinstance(trials, int) and trials >= 1, "an integer >= 1")
    if sampler != "grid":
        settings = _settings_in(space.values())
        _check(path, "sweep.trials", trials <= settings, f"at most the {settings:.0f} settings its [space] holds")
    every = table.get("report_every_frames", 10_000)
    _check(path, "sweep.report_every_frames", isinstance(every, int) and every >= 1, "an integer >= 1")
    run = dict(data.get("run", {}))
    _check(path, "run.learner", isinstance(run.get("learner", {}), dict), "a table")
    _check(path, "run.learner.stop", isinstance(run.get("learner", {}).get("stop", {}), dict), "a table")
    budget = run.get("learner", {}).get("stop", {}).get("after_frames")
    _check(path, "run.learner.stop.after_frames", isinstance(budget, int) and budget > 0, "every trial's budget in frames (an integer)")
    heartbeat = table.get("heartbeat_s", 30)
    _check(path, "sweep.heartbeat_s", isinstance(heartbeat, int) and heartbeat >= 1, "an integer >= 1")
    storage = table.get("storage", f"sqlite:///{(directory / 'study.db').resolve()}")
    _check(path, "sweep.storage", isinstance(storage, str) and bool(storage), "an Optuna storage URL (a string)")
    keep = table.get("keep")
    _check(path, "sweep.keep", keep is None or (isinstance(keep, str) and bool(keep)), "a directory (a string)")
    preset = str(table.get("preset", run.pop("preset", "none")))
    return Sweep(
        source=path, name=name, directory=directory, storage=storage, sampler=sampler, trials=trials, seeds=tuple(seeds),
        pruner=pruner, report_every_frames=every, preset=preset, run=run, grid=grid, space=space, budget_frames=budget,
        heartbeat_s=heartbeat, keep=None if keep is None else pathlib.Path(keep),
    )


def _distribution(path: pathlib.Path, key: str, value: Any) -> Distribution:
    where = f"space.{key}"
    _check(path, where, isinstance(value, dict), "a table: {choices = [...]} or {low = ..., high = ..., log = true}")
    if "choices" in value:
        _check(path, where, set(value) == {"choices"} and bool(value["choices"]), "choices alone, non-empty")
        return Distribution(choices=tuple(value["choices"]))
    _check(path, where, set(value) <= {"low", "high", "log", "integer"} and {"low", "high"} <= set(value), "low and high (log, integer optional)")
    low, high = value["low"], value["high"]
    _check(path, where, isinstance(low, (int, float)) and isinstance(high, (int, float)) and low < high, "numbers with low < high")
    _check(path, where, not value.get("log") or low > 0, "low > 0 on a log scale")
    return Distribution(low=low, high=high, log=bool(value.get("log", False)), integer=bool(value.get("integer", False)))


def _settings_in(space: Iterable[Distribution]) -> float:
    """How many settings a [space] holds: the product of its choices and integer ranges (inf with a float range)."""
    settings = 1.0
    for distribution in space:
        if distribution.choices:
            settings *= len(distribution.choices)
        elif distribution.integer:
            settings *= int(distribution.high) - int(distribution.low) + 1
        else:
            return math.inf
    return settings


def _check(path: pathlib.Path, key: str, ok: bool, expected: str) -> None:
    if not ok:
        raise config_file.ConfigFileError(f"{path}: {key} must be {expected}")
