"""Configs of the benchmark commands."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Annotated, Literal, Union

import tyro

from aioseed.algos.impala.config import NetworkKind
from aioseed.bench.load_config import ServeBench, StreamsBench, TransportBench
from aioseed.bench.recipe_config import PresetsBench, TimeToScoreBench
from aioseed.commands.run import PresetName, RunConfig
from aioseed.envs.registry import EnvBackend
from aioseed.server.config import ConsoleConfig, StopConfig
from aioseed.server.trajectories.pacing import ActingMode


def cartpole_run() -> RunConfig:
    """``aioseed run``'s CartPole with nothing written and no console."""
    return RunConfig(learner=dataclasses.replace(RunConfig().learner, logdir=None, console=ConsoleConfig(enabled=False)))


@dataclasses.dataclass(frozen=True)
class CartpoleBench:
    """Wall seconds and env steps until the mean return over 100 episodes reaches 475 (median of runs)."""

    run: RunConfig = dataclasses.field(default_factory=cartpole_run)
    """The ``aioseed run`` set-up each run uses (no logdir: nothing is written)."""
    runs: int = 3
    """Independent runs, seeded seed, seed + 1, ...; the median is reported."""
    seed: int = 0
    """Seed of the first run."""
    target_return: float = 475.0
    """Mean return to reach."""
    target_window: int = 100
    """Episodes the mean return is taken over."""
    timeout_s: float = 300.0
    """Give up a run after this long."""
    json: bool = False
    """Print the result as one JSON line."""


def atari_run() -> RunConfig:
    """Pong with the Nature CNN, 2 actors x 32 envs, learner-side frame stacking."""
    from aioseed.algos.impala.config import ImpalaConfig

    learner = dataclasses.replace(
        RunConfig().learner,
        env="ALE/Pong-v5",
        logdir=None,
        console=ConsoleConfig(enabled=False),
        stop=StopConfig(),
        impala=ImpalaConfig(network="nature_cnn", reward_clipping="abs"),
        learner_frame_stack=4,  # actors send single frames: ratio_vs_bound 0.86 against 0.80 with actor stacking
    )
    return RunConfig(learner=learner, num_actors=2, envs_per_actor=32, envs_per_message=32)


@dataclasses.dataclass(frozen=True)
class AtariBench:
    """End-to-end training frames/s on Pong next to each component alone and the compute bound they imply."""

    run: RunConfig = dataclasses.field(default_factory=atari_run)
    """The ``aioseed run`` set-up that is measured."""
    seconds: float = 60.0
    """Measured seconds of end-to-end training, after the warm-up."""
    warmup_s: float = 20.0
    """Seconds of training before measuring (start-up, tracing, filling the pipeline)."""
    component_s: float = 10.0
    """Seconds each component is measured alone."""
    json: bool = False
    """Print the result as one JSON line."""


@dataclasses.dataclass(frozen=True)
class LearningCurveBench:
    """Trains a preset in sessions that resume from checkpoints; plots frames vs mean return (CSV and PNG).

    ``--preset`` picks the set-up, and ``--run.*`` flags override single fields of it.
    """

    preset: PresetName = "atari"
    """The ``aioseed run --preset`` to train."""
    env: str | None = None
    """Gymnasium id to train on (default: the preset's)."""
    run: RunConfig = dataclasses.field(default_factory=RunConfig)
    """The ``aioseed run`` set-up: the preset's, with any ``--run.*`` flags on top."""
    logdir: pathlib.Path | None = None
    """Checkpoints, TensorBoard logs, curve.csv and curve.png (default: logs/curves/<env>-<preset>)."""
    minutes: float = 30.0
    """Wall minutes of training in this invocation; run the command again to carry on."""
    target_frames: int = 20_000_000
    """Stop for good once the run has this many env frames."""
    target_return: float | None = None
    """The mean return the curve is judged against (a line on the plot; None: none)."""
    plot_only: bool = False
    """Only rebuild curve.csv and curve.png from the logs already written."""
    allow_changed_config: bool = False
    """Go on although the run's config.toml (the previous session's) differs from these flags in more than the
    stop conditions: a deliberate change of phase, e.g. a lower entropy cost. Without it such a resume is refused,
    so that one curve never silently mixes two set-ups."""
    scoring_bin_frames: int = 100_000
    """Football: the frames each row of scoring.csv covers (the scoring rate of the episodes that ended in them)."""

    def __post_init__(self) -> None:
        if self.scoring_bin_frames < 1:
            raise ValueError(f"scoring_bin_frames must be positive, got {self.scoring_bin_frames}")

    @property
    def resolved_run(self) -> RunConfig:
        """``run`` with ``env`` and the logdir applied; console off (the bench owns the learner)."""
        env = self.env or self.run.learner.env
        slug = env.replace("/", "-").replace(":", "-")
        logdir = self.logdir or pathlib.Path("logs/curves") / f"{slug}-{self.preset}"
        learner = dataclasses.replace(self.run.learner, env=env, logdir=logdir, stop=StopConfig())
        return dataclasses.replace(self.run, learner=learner)


def _football_run() -> RunConfig:
    from aioseed.presets import preset

    return preset("football-academy-simple115")


@dataclasses.dataclass(frozen=True)
class FootballBench:
    """Env steps/s end to end on Google Research Football next to the engine's own rate, and the fraction
    of scoring episodes reached in a learning run."""

    run: RunConfig = dataclasses.field(default_factory=_football_run)
    """The ``aioseed run`` set-up (default: --preset football-academy-simple115); logdir and console are turned off."""
    seconds: float = 60.0
    """Seconds over which env steps/s is measured, after the warm-up."""
    warmup_s: float = 30.0
    """Seconds of training before measuring (start-up, tracing, filling the pipeline)."""
    component_s: float = 10.0
    """Seconds the engine is stepped alone."""
    learn_frames: int = 2_000_000
    """Frames the learning run may take to reach ``target_scoring`` (0: no learning run, throughput only)."""
    target_scoring: float = 0.9
    """Fraction of the learner's last episodes that must score."""
    timeout_s: float = 4 * 3600.0
    """Give up the learning run after this long."""
    json: bool = False
    """Print the result as one JSON line."""


@dataclasses.dataclass(frozen=True)
class DevicesBench:
    """The train step on one device next to the same step data-parallel on several (MirroredStrategy),
    timed alternately in one process on the same batch; and inference on one device."""

    devices: str = "/CPU:0,/CPU:1"
    """The devices of the data-parallel step (/CPU:k splits the CPU into logical devices)."""
    networks: tuple[Literal["mlp", "nature_cnn"], ...] = ("mlp", "nature_cnn")
    """mlp: CartPole's observations; nature_cnn: Pong's 4x84x84 frames."""
    batch_size: int = 32
    """Unrolls per train step (split equally between the devices)."""
    unroll_length: int = 20
    """T: steps per unroll."""
    steps: int = 20
    """Timed train steps per configuration, after three untimed ones."""
    json: bool = False
    """Print one JSON object per network."""


@dataclasses.dataclass(frozen=True)
class ArchitecturesBench:
    """SEED, IMPALA, Sebulba and Anakin training on the same cores for a fixed time: frames/s, policy lag,
    wire bytes per env step and the CPU split, on Pong (Nature CNN) and CartPole (MLP)."""

    workloads: tuple[Literal["pong", "cartpole"], ...] = ("pong", "cartpole")
    """pong: ``bench atari``'s set-up; cartpole: ``aioseed run``'s default."""
    architectures: tuple[Literal["seed", "impala", "sebulba", "anakin"], ...] = ("seed", "impala", "sebulba", "anakin")
    """Rows of each workload (anakin only for envs written in TensorFlow)."""
    impala_envs_per_message: int = 1
    """IMPALA rows: envs each actor-side inference covers (1: IMPALA's actors, one env per policy call)."""
    anakin_envs: int = 1024
    """Anakin rows: envs stepped together in the compiled program (its lever: one call per T steps of all)."""
    anakin_batch_size: int = 256
    """Anakin rows: envs whose unrolls make one update (1024 envs in updates of 256 learn CartPole to 475
    in ~15 s here)."""
    seconds: float = 30.0
    """Measured seconds per row, after the warm-up."""
    warmup_s: float = 20.0
    """Seconds before measuring (start-up, tracing, filling the pipeline)."""
    component_s: float = 5.0
    """Seconds each component is measured alone for the CPU split."""
    json: bool = False
    """Print one JSON object per row."""


@dataclasses.dataclass(frozen=True)
class AutotuneBench:
    """The batching auto-tuner against a grid search of fixed settings, per workload, in one learner's life:
    the grid's best setting that meets the latency target, then the tuner from a bad start (batch 1,
    deadline 0.1 ms) for the grid's total time."""

    workloads: tuple[Literal["cartpole-64", "cartpole-1024", "pong"], ...] = ("cartpole-64", "cartpole-1024", "pong")
    """cartpole-64: 64 streams at K=1; cartpole-1024: 1,024 streams at K=1; pong: Nature CNN, 2 x 32 envs at K=32."""
    batch_sizes: tuple[int, ...] = (8, 32, 128, 512, 1024)
    """Grid: max_batch_size values."""
    deadlines_ms: tuple[float, ...] = (0.5, 2.0, 8.0, 32.0)
    """Grid: deadline_ms values."""
    settle_s: float = 2.0
    """Seconds after each change before measuring."""
    measure_s: float = 6.0
    """Measured seconds per grid point."""
    bracket_s: float = 18.0
    """Measured seconds of the grid's best point just before and just after the tuner's run."""
    ab_s: float = 10.0
    """Measured seconds of each of four holds after the tuner's run, in the order its final setting, the
    best point, the best point, its final setting: their ratio says where the tuner stopped, apart from
    the host's drift (0: skip them)."""
    warmup_s: float = 20.0
    """Seconds of traffic before the first grid point (start-up, tracing)."""
    latency_target_ms: float = 50.0
    """Action latency p99 the grid's best and the tuner must meet."""
    json: bool = False
    """Print one JSON object per workload."""


def ppo_run() -> RunConfig:
    """``--preset atari-ppo`` (CleanRL's recipe, synchronous) with nothing written and no console."""
    from aioseed.presets import preset

    run = preset("atari-ppo")
    return dataclasses.replace(run, learner=dataclasses.replace(run.learner, logdir=None, console=ConsoleConfig(enabled=False)))


@dataclasses.dataclass(frozen=True)
class ActingBench:
    """Training frames/s of one set-up in each acting mode, held in the order of ``modes`` and back again
    (A B C C B A), so that a linear drift of the host's speed cancels in each mode's mean."""

    run: RunConfig = dataclasses.field(default_factory=ppo_run)
    """The ``aioseed run`` set-up (default: --preset atari-ppo, Pong); only training.acting changes."""
    modes: tuple[ActingMode, ...] = ("async", "bounded", "synchronous")
    """Acting modes, in order; the first is the baseline of the ratios."""
    seconds: float = 60.0
    """Measured seconds per hold, after the warm-up."""
    warmup_s: float = 25.0
    """Seconds of training before measuring (start-up, tracing, the first batches)."""
    json: bool = False
    """Print one JSON object per mode."""


@dataclasses.dataclass(frozen=True)
class PrecisionBench:
    """The train step and inference in float32 and bfloat16, timed in turn (A B B A) in this process."""

    run: RunConfig = dataclasses.field(default_factory=ppo_run)
    """Whose network, env and train batch are timed (default: --preset atari-ppo's)."""
    networks: tuple[NetworkKind, ...] = ("nature_cnn",)
    """Torsos to time (the run's impala.network is replaced by each; impala_resnet's train step on the
    default batch takes ~10 s here)."""
    inference_batches: tuple[int, ...] = (8, 32, 256)
    """Inference batch sizes."""
    seconds: float = 5.0
    """Seconds per hold (four holds per figure)."""
    json: bool = False
    """Print one JSON object per network."""


@dataclasses.dataclass(frozen=True)
class ImpalaHostileBench:
    """IMPALA mode under hostile and failing peers, through real processes on loopback (a learner, one
    healthy ``aioseed actor --architecture impala``): parameter pulls beside a client that stalls its
    downloads, an upload flood, and the actor's recovery after the learner stalls and after it restarts.
    Each figure is printed beside the baseline measured just before it in the same run."""

    env: str = "CartPole-v1"
    """The env the learner serves and the actor steps."""
    hidden_sizes: tuple[int, ...] = (1024, 1024)
    """The MLP's widths: ~4 MiB of parameters, more than a stalled client's 64 KiB receive window."""
    actor_envs: int = 8
    """Envs of the healthy actor."""
    envs_per_message: int = 4
    """Its envs per stream (so it holds actor_envs / envs_per_message streams)."""
    seconds: float = 10.0
    """Seconds per measured window."""
    stalled_connections: int = 16
    """Connections of the stalling client; each holds calls_per_connection downloads it never reads."""
    calls_per_connection: int = 4
    """Stalled downloads per connection (16 x 4: the 64 of the issue's target)."""
    flood_streams: int = 8
    """Upload streams of the flood, each on its own connection, each sending messages of flood_message_bytes."""
    flood_message_bytes: int = 60 * 2**20
    """Size of each flood upload (the learner's limit is --server.max-message-bytes, 64 MiB)."""
    stall_s: float = 4.0
    """Seconds the learner process is stopped (SIGSTOP) in the stall test."""
    learning_rate: float = 0.0
    """The learner's learning rate. 0 (the default) freezes the policy while the learner still trains, so the
    work per env step is the same before and after each test and the baseline is one the actor can return to
    (a learning CartPole policy moved the actor's rate by 10-20% between 3 s windows)."""
    workdir: pathlib.Path | None = None
    """Where the learner's run and the processes' logs go (None: a temporary directory, removed after)."""
    json: bool = False
    """Print one JSON object per test."""


@dataclasses.dataclass(frozen=True)
class SacBench:
    """SAC's speed through real processes (``--preset mujoco-sac``: a learner and one actor process on
    loopback), two update paths side by side in one run, held A B B A: today's (``--sac.update separate``,
    one update per train step) and the fused one (``minibatches`` updates per compiled call). For each,
    env steps/s and updates/s once training runs, beside the compute bound from the env's step, inference of
    one message's rows and one update, each timed alone in this process."""

    env: str = "HalfCheetah-v5"
    """Any env with a bounded Box action space."""
    seconds: float = 60.0
    """Seconds of each timed hold, after its warm-up."""
    warmup_s: float = 15.0
    """Seconds from each run's first env frames before its hold: the replay fills and the update is traced and
    compiled (XLA took ~10 s on a slow day)."""
    min_replay_size: int = 1_000
    """Transitions in replay before training starts (the preset's 5,000 would spend most of a short run filling it)."""
    replay_ratio: float = 256.0
    """The run's replay ratio (the preset's: one update per env step)."""
    minibatches: int = 4
    """Updates per compiled call of the fused path (each on the preset's per-update batch)."""
    jit_compile: bool = True
    """Compile the fused path with XLA."""
    precision: Literal["float32", "bfloat16"] = "float32"
    """What the fused path's hidden layers compute in (today's path: float32)."""
    json: bool = False
    """Print one JSON object."""

    def __post_init__(self) -> None:
        if not self.seconds > 0 or self.warmup_s < 0:
            raise ValueError(f"seconds must be positive and warmup_s not negative, got {self.seconds} and {self.warmup_s}")


@dataclasses.dataclass(frozen=True)
class EnvBackendsBench:
    """The env backends side by side on one env: a fixed policy's returns under each (do they agree
    within their sampling error?) and env steps/s per core, in one run."""

    env: str = "ALE/Pong-v5"
    """An ALE/ id, football:<scenario> or a gymnasium id that EnvPool also has (Hopper-v5, ...)."""
    backends: tuple[EnvBackend, ...] = ("default", "envpool")
    """The backends, in the order they run."""
    episodes: int = 16
    """Episodes per backend (the returns' sample): each env's first episodes/envs (rounded up)."""
    envs: int = 8
    """Envs stepped together."""
    logdir: pathlib.Path | None = None
    """The fixed policy: this run's latest checkpoint, sampling (None: uniformly random actions)."""
    seed: int = 0
    """Seed of the envs (env i: seed + i) and of the random policy."""
    max_steps: int = 2_000_000
    """A bound on the vector steps per backend."""
    json: bool = False
    """Print one JSON object."""

    def __post_init__(self) -> None:
        if self.episodes < 2 or self.envs < 1:
            raise ValueError("episodes must be >= 2 (Welch's test needs each backend's spread) and envs >= 1")


BENCHES: dict[str, type] = {
    "transport": TransportBench,
    "serve": ServeBench,
    "cartpole": CartpoleBench,
    "atari": AtariBench,
    "learning-curve": LearningCurveBench,
    "streams": StreamsBench,
    "football": FootballBench,
    "devices": DevicesBench,
    "architectures": ArchitecturesBench,
    "autotune": AutotuneBench,
    "acting": ActingBench,
    "precision": PrecisionBench,
    "impala-hostile": ImpalaHostileBench,
    "sac": SacBench,
    "env-backends": EnvBackendsBench,
    "presets": PresetsBench,
    "time-to-score": TimeToScoreBench,
}
"""``aioseed bench NAME``: the config of each benchmark."""
BenchCommand = Union[tuple(Annotated[config, tyro.conf.subcommand(name)] for name, config in BENCHES.items())]  # noqa: UP007


@dataclasses.dataclass(frozen=True)
class Bench:
    """Benchmarks that print their figures next to a baseline measured in the same run."""

    command: tyro.conf.OmitSubcommandPrefixes[BenchCommand]
