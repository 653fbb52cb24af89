"""Runs as ``aioseed report`` sees them: each a logdir (or a kept run, ``aioseed.results.kept``) with its config,
its seed, its env (the task) and one score, taken from a kept evaluation (``aioseed eval`` writes
LOGDIR/evaluations/*.json) or from the end of its curve; runs are grouped into settings by the config keys in
which they differ."""

from __future__ import annotations

import dataclasses
import json
import pathlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import structlog

from aioseed.compose import config_file
from aioseed.errors import InvalidInput, MissingFile, UserError
from aioseed.results.curves import Point, run_curve
from aioseed.results.kept import CURVE, PARTIAL, kept_curve
from aioseed.tables import flatten

log = structlog.get_logger()

ScoreSource = Literal["auto", "eval", "curve"]

NOT_SETTINGS = ("logdir", "seed", "env", "port", "token", "init_checkpoint", "display", "log_every_s", "metrics_every_s")
"""Config keys (by their last part) that never tell settings apart: where a run writes, its seed, its
task, and how it is watched."""


@dataclasses.dataclass(frozen=True)
class Run:
    logdir: pathlib.Path
    env: str
    seed: int | None
    score: float
    frames: int
    source: str
    """Where the score came from, e.g. ``eval seed (30 episodes)`` or ``curve (last 100 episodes)``."""
    settings: Mapping[str, Any]
    """The run's config as dotted keys (``learner.impala.learning_rate``), less ``NOT_SETTINGS``."""
    curve: tuple[Point, ...] = ()
    """Its mean return against frames (each over its last return window of episodes); empty where it has none."""


def logdirs(paths: Iterable[pathlib.Path]) -> list[pathlib.Path]:
    """Each path that is a logdir (holds config.toml), and every logdir below the others, sorted."""
    found: list[pathlib.Path] = []
    for path in paths:
        if (path / "config.toml").is_file():
            found.append(path)
            continue
        below = sorted(p.parent for p in path.rglob("config.toml") if not p.parent.name.endswith(PARTIAL))  # a kept run half-written
        if not below:
            raise MissingFile(f"{path} holds no run: no config.toml in it or below it")
        found += below
    return sorted(set(found))


def read_run(logdir: pathlib.Path, source: ScoreSource = "auto", protocol: str | None = None, curve: bool = True) -> Run:
    """The run in ``logdir``, scored by its newest kept evaluation (of ``protocol``, if given) or, where
    ``source`` allows or none is kept, by the last point of its curve. ``curve=False``: a run scored by its
    evaluation is read without its curve (parsing its event files takes seconds on a long run). A damaged run
    (a config without its env, a kept curve or evaluation that does not parse) is InvalidInput, naming it."""
    try:
        return _read_run(logdir, source, protocol, curve)
    except UserError:
        raise
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInput(f"{logdir}: a damaged run ({type(exc).__name__}: {exc}); remove it from the runs or mend it") from exc


def _read_run(logdir: pathlib.Path, source: ScoreSource, protocol: str | None, curve: bool) -> Run:
    table = config_file.read(logdir / "config.toml")
    table.pop(config_file.PROVENANCE, None)
    table.pop("command", None)
    flat = flatten(table)
    learner = {k.removeprefix("learner."): v for k, v in flat.items()}
    seed = learner.get("seed")
    unused = other_algorithms(learner.get("agent"))
    settings = {k: v for k, v in flat.items() if k.rpartition(".")[2] not in NOT_SETTINGS and not k.startswith(unused)}
    evaluation = _newest_evaluation(logdir, protocol) if source != "curve" else None
    if evaluation is None and source == "eval":
        which = f"--protocol {protocol} " if protocol else ""
        raise MissingFile(f"{logdir} has no kept evaluation: run aioseed eval {which}--logdir {logdir}")
    window = int(learner.get("return_window", 100))
    if evaluation is not None:
        described = f"eval {evaluation['protocol']['name']} ({evaluation['episodes']} episodes, {evaluation['policy']})"
        points: list[Point] = []
        if curve:  # for the curves plot only: a run scored by its evaluation needs no readable curve
            try:
                points = _curve(logdir, window)[0]
            except (OSError, ValueError) as exc:
                log.warning("curve_unreadable", logdir=str(logdir), error=str(exc))
        return Run(
            logdir=logdir, env=evaluation["env"], seed=_seed(seed), score=evaluation["mean_return"], frames=evaluation["frames"],
            source=described, settings=settings, curve=tuple(points),
        )
    points, kept = _curve(logdir, window)
    if not points:
        raise MissingFile(f"{logdir} has neither a kept evaluation nor a curve (no charts/return in tensorboard/, no {CURVE})")
    last = points[-1]
    described = f"{'kept ' if kept else ''}curve (last {window if last.episodes is None else last.episodes} episodes)"
    return Run(
        logdir=logdir, env=str(learner["env"]), seed=_seed(seed), score=last.mean_return, frames=last.frames, source=described,
        settings=settings, curve=tuple(points),
    )


def _curve(logdir: pathlib.Path, window: int) -> tuple[list[Point], bool]:
    """The run's curve and whether it is a kept one: each mean over the run's last ``window`` episodes, across
    resumed sessions (the learner's own mean starts over at each)."""
    kept = None if (logdir / "tensorboard").is_dir() else kept_curve(logdir)
    return kept or run_curve(logdir, window), bool(kept)  # run_curve reads each event file once


def _seed(value: Any) -> int | None:
    return None if value in (None, "None") else int(value)


def _newest_evaluation(logdir: pathlib.Path, protocol: str | None) -> dict[str, Any] | None:
    """The kept evaluation of the most frames (of ``protocol``, if given); of those, the one of the most episodes,
    and the newest file of those."""
    kept = []
    for path in (logdir / "evaluations").glob("*.json"):
        result = json.loads(path.read_text())
        if protocol is None or result.get("protocol", {}).get("name") == protocol:
            kept.append((result["frames"], result.get("episodes", 0), path.stat().st_mtime, result))
    return max(kept, key=lambda k: k[:3])[3] if kept else None


def other_algorithms(agent: Any) -> tuple[str, ...]:
    """The config sections of the algorithms a run of ``agent`` does not train (``learner.r2d2.`` for SAC): their
    fields name no setting of it (a SAC run saved before R2D2 gained fields would differ from one saved after)."""
    from aioseed.algos.registry import ALGORITHMS

    if agent not in ALGORITHMS:  # an older config without the key, or a plug-in not installed here: keep them all
        return ()
    return tuple(f"learner.{a.section}." for a in ALGORITHMS.values() if a.section and a.name != agent)


def group(runs: Sequence[Run], by: Sequence[str] = ()) -> dict[str, list[Run]]:
    """Runs by setting: the values of the keys ``by`` (matched by suffix: ``learning_rate``), or by default
    of every config key whose value differs between runs; a label such as ``impala.learning_rate=0.0005``."""
    keys = [_key(runs, name) for name in by] if by else _differing(runs)
    groups: dict[str, list[Run]] = {}
    for run in runs:
        label = " ".join(f"{_short(k)}={run.settings.get(k)}" for k in keys) or "all runs"
        groups.setdefault(label, []).append(run)
    return groups


def _differing(runs: Sequence[Run]) -> list[str]:
    keys = sorted({k for run in runs for k in run.settings})
    # A key missing from older runs' configs (a field added since) and unset ("None") in newer ones is no setting.
    return [k for k in keys if len({json.dumps(_unset(run.settings.get(k)), sort_keys=True) for run in runs}) > 1]


def _unset(value: Any) -> Any:
    return None if value == "None" else value


def _key(runs: Sequence[Run], name: str) -> str:
    spelled = name.replace("-", "_")  # as the flag is spelled: --group-by learner.impala.learning-rate
    keys = {k for run in runs for k in run.settings if k == spelled or k.endswith("." + spelled)}
    if len(keys) != 1:
        raise InvalidInput(f"--group-by {name}: {'no config key matches' if not keys else 'ambiguous: ' + ', '.join(sorted(keys))}")
    return keys.pop()


def _short(key: str) -> str:
    return key.removeprefix("learner.")
