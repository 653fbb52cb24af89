"""A run kept as a result: the few small files ``aioseed report`` scores it from, to commit in place of its logdir.

A kept run is a directory holding the run's ``config.toml``, its curve as ``curve.csv`` (the mean return over its
return window against frames, at most 500 rows), its kept evaluations (``evaluations/*.json``) and, for a sweep's
trial, the ``trial.toml`` it ran from; no checkpoints, no event files. ``aioseed report`` reads one as it reads a logdir, and ``aioseed sweep`` (``[sweep] keep``) writes
one for each finished trial and counts it as done, so a sweep's seeds may be trained in parts, on different
machines, with only the kept results carried between them.
"""

from __future__ import annotations

import pathlib
import shutil

from aioseed.errors import MissingFile
from aioseed.results.curves import Point, read_csv, run_curve, write_csv

CURVE = "curve.csv"
"""A kept run's curve, beside its config.toml."""
TRIAL = "trial.toml"
"""A sweep trial's ``aioseed run --config`` file (``aioseed.sweep.trial.write_config``)."""
PARTIAL = ".partial"
"""The suffix of a kept run still being written (``aioseed report`` skips it)."""


def keep(logdir: pathlib.Path, into: pathlib.Path, window: int) -> pathlib.Path:
    """Writes the run in ``logdir`` as a kept run in ``into`` (replacing one there): its config, its curve over
    ``window`` episodes and its evaluations. Returns ``into``."""
    points = run_curve(logdir, window)
    if not points:
        raise MissingFile(f"{logdir} has no curve to keep (no charts/return in tensorboard/)")
    partial = into.with_name(into.name + PARTIAL)
    shutil.rmtree(partial, ignore_errors=True)
    (partial / "evaluations").mkdir(parents=True)
    write_csv(points, partial / CURVE)
    for evaluation in sorted((logdir / "evaluations").glob("*.json")):
        shutil.copy2(evaluation, partial / "evaluations" / evaluation.name)
    if (logdir / TRIAL).is_file():
        shutil.copy2(logdir / TRIAL, partial / TRIAL)
    shutil.copy2(logdir / "config.toml", partial / "config.toml")  # last: what makes a directory a run
    shutil.rmtree(into, ignore_errors=True)
    partial.rename(into)  # whole or not at all: a sweep counts a kept run as done
    return into


def kept_curve(path: pathlib.Path) -> list[Point] | None:
    """The curve of the kept run in ``path`` (None where ``path`` holds none)."""
    curve = path / CURVE
    return read_csv(curve) if curve.is_file() else None
