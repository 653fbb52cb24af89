"""``aioseed bench learning-curve``: train a preset across sessions; frames vs mean return as CSV and PNG (and
for Football, the scoring rate against frames as scoring.csv).

Each invocation trains for ``minutes`` with ``aioseed run``'s set-up; the
learner resumes from the latest checkpoint in its logdir, frame counter
included. The curve is then rebuilt from the run's TensorBoard logs, which span
every session, so a session cut short (even killed) only loses the frames since
its last checkpoint. ``seconds`` counts training time only: the gaps between
sessions are left out.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pathlib
import sys
import textwrap

import structlog

from aioseed.bench.config import LearningCurveBench
from aioseed.compose import config_file
from aioseed.compose.config import LearnerConfig
from aioseed.envs.atari import is_atari
from aioseed.envs.football import is_football
from aioseed.errors import InvalidInput
from aioseed.results.curves import RETURN_TAG, Point, episode_returns, over_episodes, read_curve, write_csv
from aioseed.results.scoring import GOAL_RETURNS, scoring_bins, write_scoring_csv
from aioseed.server.config import StopConfig
from aioseed.tables import flatten

log = structlog.get_logger()


def write_png(
    points: list[Point], path: pathlib.Path, title: str, target_return: float | None, target_frames: int, window: int = 100
) -> None:
    """The curve; ``window``: the episodes each mean return is taken over (the learner's return_window)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    frames = [p.frames / 1e6 for p in points]
    axes.plot(frames, [p.mean_return for p in points], label=f"mean return (last {window} episodes)")
    if any(not math.isnan(p.eval_return) for p in points):
        axes.plot(frames, [p.eval_return for p in points], label="evaluation return", alpha=0.7)
    if target_return is not None:
        axes.axhline(target_return, color="tab:green", linestyle="--", label=f"target {target_return:+g}")
    axes.axvline(target_frames / 1e6, color="tab:gray", linestyle=":", label=f"{target_frames / 1e6:g}M frames")
    minutes = points[-1].seconds / 60 if points else 0.0
    title = textwrap.fill(f"{title} ({minutes:.0f} min)", 70)  # long env ids and preset names stay inside the figure
    axes.set(xlabel="env frames (millions)", ylabel="mean episode return", title=title)
    axes.grid(alpha=0.3)
    axes.legend(loc="lower right")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def summarize(points: list[Point], target_return: float | None, window: int = 1) -> dict[str, float | int | None]:
    """The last and best points, and the first whose mean over a full ``window`` of episodes reached
    ``target_return`` (as the learner's stop rule judges it)."""
    full = [p for p in points if p.episodes is None or p.episodes >= window]
    reached = None if target_return is None else next((p for p in full if p.mean_return >= target_return), None)
    return {
        "frames": points[-1].frames if points else 0,
        "seconds": round(points[-1].seconds, 1) if points else 0.0,
        "mean_return": points[-1].mean_return if points else None,
        "best_return": max(p.mean_return for p in points) if points else None,
        "target_return": target_return,
        "frames_to_target": None if reached is None else reached.frames,
        "seconds_to_target": None if reached is None else round(reached.seconds, 1),
    }


def scoring(logdir: pathlib.Path, goal_return: float, bin_frames: int) -> dict[str, object]:
    """Football: logdir/scoring.csv (the scoring rate per ``bin_frames``), and the last and best rates."""
    bins = scoring_bins(episode_returns(logdir / "tensorboard"), goal_return, bin_frames)
    write_scoring_csv(bins, logdir / "scoring.csv")
    return {
        "scoring_rate": bins[-1].scoring_rate if bins else None,
        "best_scoring_rate": max(b.scoring_rate for b in bins) if bins else None,
        "scoring_csv": str(logdir / "scoring.csv"),
    }


def train(bench: LearningCurveBench) -> None:
    import uvloop

    from aioseed.commands.run import train_locally

    run = bench.resolved_run
    stop = StopConfig(after_frames=bench.target_frames, after_seconds=bench.minutes * 60.0)
    learner = dataclasses.replace(run.learner, stop=stop)
    summary = uvloop.run(train_locally(dataclasses.replace(run, learner=learner)))
    log.info("learning_curve_session", frames=summary.frames, mean_return=round(summary.mean_return, 2))


def curve_title(bench: LearningCurveBench) -> str:
    """The plot's title: agent, env and preset, then the protocol (Atari's sticky actions, Football's
    controlled players) and the seed, when one is fixed."""
    return run_title(bench.resolved_run.learner, bench.preset)


def run_title(learner: LearnerConfig, preset: str) -> str:
    """``curve_title`` of a run of ``preset`` with ``learner``'s settings."""
    title = f"aioseed {learner.agent} on {learner.env} (preset {preset})"
    if is_atari(learner.env):
        title += f", sticky actions {learner.atari.sticky_action_probability:g}"
    football = learner.football
    if is_football(learner.env):  # always: presets differ in their player counts
        title += f", controlled players: {football.left_players} left, {football.right_players} right"
    if learner.seed is not None:
        title += f", seed {learner.seed}"
    return title


SESSION_SETTINGS = ("learner.stop.", "console.")
"""Settings a session may change: the bench sets the stop conditions per session."""


def changed_settings(logdir: pathlib.Path, run: object) -> list[str]:
    """``key: saved -> now`` for each setting of ``run`` that differs from the run's config.toml, if it has one
    (settings the file does not know, added by a later aioseed, are not compared)."""
    path = logdir / "config.toml"
    if not path.exists():
        return []
    saved = flatten(config_file.command_table(config_file.read(path), "run", str(path)))
    now = flatten(config_file.document(run))
    keys = sorted(saved.keys() & now.keys())
    return [f"{k}: {saved[k]!r} -> {now[k]!r}" for k in keys if not k.startswith(SESSION_SETTINGS) and saved[k] != now[k]]


def main(bench: LearningCurveBench) -> int:
    run = bench.resolved_run
    logdir = run.learner.logdir
    assert logdir is not None  # resolved_run always has one
    changes = changed_settings(logdir, run)
    if changes and not bench.allow_changed_config:
        raise InvalidInput(
            f"{logdir} was trained with other settings ({'; '.join(changes[:4])}{'; ...' if len(changes) > 4 else ''}): "
            "give the flags of its first session, or --allow-changed-config to change them from here on"
        )
    if changes:
        log.warning("learning_curve_config_changed", changes=changes)
    points = read_curve(logdir / "tensorboard")
    if not bench.plot_only and (not points or points[-1].frames < bench.target_frames):
        train(bench)
        points = read_curve(logdir / "tensorboard")
    window = run.learner.return_window
    points = over_episodes(points, episode_returns(logdir / "tensorboard"), window)
    if not points:
        raise SystemExit(f"no {RETURN_TAG} summaries under {logdir / 'tensorboard'} yet")
    write_csv(points, logdir / "curve.csv")
    title = curve_title(bench)
    write_png(points, logdir / "curve.png", title, bench.target_return, bench.target_frames, window)
    result: dict[str, object] = {**summarize(points, bench.target_return, window)}
    result.update(csv=str(logdir / "curve.csv"), png=str(logdir / "curve.png"))
    if is_football(run.learner.env):
        result.update(scoring(logdir, GOAL_RETURNS[run.learner.football.rewards], bench.scoring_bin_frames))
    print(json.dumps(result), file=sys.stdout, flush=True)
    return 0
