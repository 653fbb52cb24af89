"""Configs of the benchmarks that time a preset as a user runs it: ``bench presets`` (frames/s side by side
with each preset's compute bound) and ``bench time-to-score`` (wall-clock from launch to a return target)."""

from __future__ import annotations

import dataclasses
import pathlib
import shlex

import tyro

from aioseed.commands.run import PresetName, RunConfig


@dataclasses.dataclass(frozen=True)
class PresetsBench:
    """Training frames/s of presets side by side, each exactly as ``aioseed run --preset NAME`` trains it
    (nothing written, no console), held in the order of ``presets`` and back again (A B B A), so that a
    linear drift of the host's speed cancels in each preset's mean; then each preset's components alone
    (env, inference, train step in core-ms per agent step), the compute bound they imply on this machine's
    cores, and the preset's ratio to it."""

    presets: tuple[PresetName, ...] = ("atari-ppo", "atari-fast")
    """Presets, in order; the first is the baseline of the ratios."""
    arms: tuple[str, ...] = ()
    """More arms, held after the presets: each a preset and ``aioseed run`` flags on it, one quoted string per arm,
    e.g. 'atari-fast --num-actors 1 --envs-per-actor 32 --envs-per-message 32'. Each trains exactly as that
    command would."""
    env: str | None = None
    """Gymnasium id every preset trains on (default: each preset's own)."""
    seconds: float = 60.0
    """Measured seconds per hold, after the warm-up."""
    warmup_s: float = 30.0
    """Seconds of training before measuring (start-up, tracing, the first batches)."""
    component_s: float = 10.0
    """Seconds each component is timed alone."""
    json: bool = False
    """Print one JSON object per preset."""

    def __post_init__(self) -> None:
        if not self.presets or "none" in self.presets:
            raise ValueError("name at least one preset (none is not one)")
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"each preset and arm is held once: {', '.join(self.labels)}")
        if self.seconds <= 0 or self.warmup_s < 0 or self.component_s <= 0:
            raise ValueError("seconds and component_s must be positive, warmup_s >= 0")
        for arm in self.arms:
            arm_run(arm)  # a mistake in an arm's flags is refused now, before the first hold

    @property
    def labels(self) -> tuple[str, ...]:
        """The presets, then the arms, as the results name them."""
        return (*self.presets, *(" ".join(arm.split()) for arm in self.arms))


@dataclasses.dataclass(frozen=True)
class TimeToScoreBench:
    """Wall-clock from ``aioseed run``'s launch to a return target, seed after seed.

    Each seed runs ``aioseed run --config LOGDIR/seedN.toml`` (the preset with ``--run.*`` flags on top, its
    seed, logdir and return window) as a child process, from a fresh logdir. The target counts once the
    mean over ``run.learner.return_window`` episodes reaches it and holds it for the next ``hold_rows`` rows
    of the curve; the child is then stopped (SIGTERM: an ordered shutdown). Per seed it reports the
    wall-clock from launch (start-up and tracing included) and the frames to that row, and frames/s; then
    the components alone on the same cores (env, inference, train core-ms per agent step), the compute
    bound they imply and each run's ratio to it; then the seeds aggregated (``aioseed report``)."""

    preset: PresetName = "atari-fast"
    """The ``aioseed run --preset`` to time."""
    run: RunConfig = dataclasses.field(default_factory=RunConfig)
    """The ``aioseed run`` set-up: the preset's, with any ``--run.*`` flags on top (seed and logdir are the bench's)."""
    seeds: tuple[int, ...] = (1, 2, 3)
    """Seeds, run one after another (--run.learner.seed is replaced by each)."""
    target_return: float = 18.0
    """The mean return to reach (Pong: +18)."""
    hold_rows: int = 10
    """Rows of the curve after the first at the target that must stay at or above it."""
    return_window: int = 32
    """Episodes each mean return is taken over (replaces --run.learner.return-window)."""
    max_frames: int = 8_000_000
    """A seed that has not reached the target by this many env frames stops and counts as not reached."""
    max_minutes: float = 60.0
    """A seed still training after this many minutes stops and counts as not reached."""
    logdir: pathlib.Path | None = None
    """Each seed's run goes to LOGDIR/seedN (default: logs/time-to-score/<env>-<preset>); it must not hold a
    run yet: a resumed run's time from launch means nothing."""
    poll_s: float = 10.0
    """Seconds between reads of the running seed's curve."""
    component_s: float = 10.0
    """Seconds each component is timed alone (after the seeds; 0: skip the split)."""
    json: bool = False
    """Print one JSON object per seed and one for the aggregate."""

    def __post_init__(self) -> None:
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one, got {self.seeds}")
        if self.hold_rows < 0 or self.return_window < 1 or self.max_frames < 1:
            raise ValueError("hold_rows must be >= 0, return_window and max_frames >= 1")
        if self.max_minutes <= 0 or self.poll_s <= 0 or self.component_s < 0:
            raise ValueError("max_minutes and poll_s must be positive, component_s >= 0")

    @property
    def root(self) -> pathlib.Path:
        """Where the seeds' logdirs, their config files and logs, and the report go."""
        if self.logdir is not None:
            return self.logdir
        slug = self.run.learner.env.replace("/", "-").replace(":", "-")
        return pathlib.Path("logs/time-to-score") / f"{slug}-{self.preset}"


def arm_run(arm: str) -> RunConfig:
    """``aioseed run --preset PRESET FLAGS`` for an arm ``PRESET FLAGS``."""
    from aioseed.presets import PRESETS, preset_flags

    name, *flags = shlex.split(arm) or [""]
    if name not in PRESETS or name == "none":
        raise ValueError(f"an arm starts with a preset's name, then aioseed run's flags; got {arm!r}")
    try:
        return tyro.cli(RunConfig, args=[*preset_flags(name), *flags], prog=f"arm {arm!r}")
    except SystemExit as exc:  # tyro printed why
        raise ValueError(f"arm {arm!r}: aioseed run refuses these flags") from exc
