"""The run's config: the env and the algorithm, then one section per concern (the learner's serving sections
from ``aioseed.server.config``, the stages' own, each algorithm's). ``aioseed learner`` serves exactly this;
``aioseed run``'s ``RunConfig`` holds it beside its local actors; ``config.toml`` stores it."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.live import LiveSetting
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.algos.registry import AgentName, algorithm
from aioseed.algos.sac.config import SacConfig
from aioseed.algos.td3.config import Td3Config
from aioseed.envs.atari import AtariConfig
from aioseed.envs.football import FootballConfig, is_football
from aioseed.envs.life_loss import NOT_IN_IMPALA_MODE
from aioseed.envs.registry import env_kwargs
from aioseed.server.batching.autotune import BatchingConfig
from aioseed.server.batching.batcher import BatcherConfig
from aioseed.server.config import ConsoleConfig, SelfPlayConfig, ServerConfig, StopConfig
from aioseed.server.reporting.tracking import TrackerConfig, TrackingName
from aioseed.server.training.live_settings import acting_settings
from aioseed.server.training.settings_record import read_schedule
from aioseed.server.training.trainer import TrainingConfig
from aioseed.server.trajectories.pacing import ActingMode

Display = Literal["auto", "live", "lines"]
"""Progress on the terminal (``aioseed.commands.terminal``)."""


@dataclasses.dataclass(frozen=True)
class LearnerConfig:
    """The learner daemon: the environment and algorithm, then one section per concern."""

    env: str = "CartPole-v1"
    """Gymnasium id of the environment the actors run (ALE/<Game>-v5 for Atari, football:<scenario> for
    Google Research Football, my_pkg.envs:MyEnv-v0 to import the module that registers MyEnv-v0 first);
    defines the spec the learner serves."""
    env_kwargs: str = "{}"
    """JSON object of keyword arguments for the env's constructor (gymnasium ids), e.g. '{"size": 8}'."""
    logdir: pathlib.Path | None = pathlib.Path("logs/cartpole")
    """Checkpoints, TensorBoard summaries and config.toml go here (None: keep nothing)."""
    devices: str = "auto"
    """Training devices: auto (the first GPU, else the CPU), all (every GPU), cpu, gpu, or a comma list such as
    /GPU:0,/GPU:1. Several train data-parallel (tf.distribute.MirroredStrategy: each takes an equal share of
    every batch, so training.batch_size must be a multiple of their number). /CPU:1 and up split the CPU into
    logical devices."""
    inference_devices: str = "same"
    """Where inference runs: same (the first training device) or a comma list; batches go round-robin to them,
    as many at once as devices are named. Inference reads the training variables themselves (no copy)."""
    seed: int | None = None
    """TensorFlow seed (None: random)."""
    precision: Literal["float32", "bfloat16"] = "float32"
    """What the network's torso (SAC: the hidden layers of the policy and critics) computes in, for inference and
    the train step: float32, or bfloat16 (Keras's mixed_bfloat16: the weights, the heads, an LSTM core and the
    loss stay float32). bfloat16 pays on GPUs
    and on CPUs with AVX-512 BF16 or AMX, for the conv nets (see docs/benchmarks.md)."""
    architecture: Literal["seed", "impala"] = "seed"
    """seed: actors stream observations and this learner runs the policy for them (parameters never leave
    it). impala: the baseline SEED improves on: actors (aioseed actor --architecture impala) pull the
    parameters, run the policy on their own CPU and upload finished unrolls with their behaviour logits."""

    server: ServerConfig = ServerConfig()
    batcher: BatcherConfig = BatcherConfig()
    batching: BatchingConfig = BatchingConfig()
    """The auto-tuner of the batcher's two settings (off unless --batching.auto)."""
    training: TrainingConfig = TrainingConfig()
    stop: StopConfig = StopConfig()
    console: ConsoleConfig = ConsoleConfig()

    agent: AgentName = "impala"
    """The algorithm: IMPALA (V-trace, and PPO-style sample reuse) from a bounded unroll queue, R2D2 from
    prioritized replay (Discrete actions), or SAC or TD3 from uniform replay (Box actions); or one an installed
    package publishes (entry-point group aioseed.algorithms), on its default settings."""
    impala: ImpalaConfig = ImpalaConfig()
    r2d2: R2D2Config = R2D2Config()
    """R2D2's settings: SEED's Atari ones by default; --preset r2d2-cartpole sizes them for CartPole-v1."""
    sac: SacConfig = SacConfig()
    """SAC's settings: CleanRL's by default; --preset mujoco-sac sets the training shape for MuJoCo."""
    td3: Td3Config = Td3Config()
    """TD3's settings: CleanRL's by default; --preset mujoco-td3 sets the training shape for MuJoCo."""

    atari: AtariConfig = AtariConfig()
    """Preprocessing of ALE/ ids: defines the spec served (aioseed run's actors use it too)."""
    football: FootballConfig = FootballConfig()
    """Observations, rewards and controlled players of football:<scenario> ids: define the spec served (as atari)."""
    self_play: SelfPlayConfig = SelfPlayConfig()
    learner_frame_stack: int = 1
    """>1: the learner stacks this many frames per env itself and Atari actors send only the newest
    (run them with --atari.stack 1): 4x less traffic, the same observations for the policy."""

    settings_schedule: pathlib.Path | None = None
    """A changes.jsonl (a run's LOGDIR/settings/changes.jsonl, or one written by hand in its form) whose live
    setting and learning-rate changes this run applies again, each once the run has trained as many frames as it
    names."""
    init_checkpoint: pathlib.Path | None = None
    """Warm start: another run's logdir, its checkpoints/ or one checkpoint (logs/x/checkpoints/ckpt-160).
    Its network weights (R2D2: and target network) are loaded when this logdir holds no checkpoint yet
    (a restart resumes from its own); counters start at zero and the optimizer fresh."""
    init_optimizer: bool = False
    """With init_checkpoint, load the optimizer's state (Adam's moments and step) too."""
    checkpoint_every_s: float = 600.0
    """Periodic checkpoint interval (0 disables; one is still written at shutdown)."""
    display: Display = "auto"
    """Progress on the terminal: live (a rich display on stdout: figures, stop conditions with bars and
    ETAs, the console's URL), lines (key=value progress log lines), auto (live when stdout is a terminal)."""
    log_every_s: float = 2.0
    """Interval of progress log lines and TensorBoard summaries."""
    metrics_every_s: float = 1.0
    """Interval of metric snapshots (the console's charts, /metrics)."""
    tensorboard: bool = True
    """Write TensorBoard summaries under logdir/tensorboard."""
    tracking: TrackingName = "none"
    """Also send the run to an experiment tracker: wandb (Weights & Biases) or mlflow; the same scalars
    as TensorBoard, the resolved config.toml, the evaluation clips and checkpoints (needs aioseed[tracking])."""
    tracker: TrackerConfig = TrackerConfig()
    return_window: int = 100
    """Episodes averaged for the mean return (charts/return and stop.at_return)."""

    def __post_init__(self) -> None:
        env_kwargs(self.env_kwargs)  # JSON object, or a clear ValueError now
        if self.tracking != "none" and self.logdir is None:
            raise ValueError(f"--tracking {self.tracking} needs a logdir (the config, clips and checkpoints it sends live there)")
        if self.settings_schedule is not None:
            read_schedule(self.settings_schedule, self.live_settings, self.agent)  # every line, now (InvalidSetting: a ValueError)
        if self.init_checkpoint is not None and self.logdir is None:
            raise ValueError("init_checkpoint needs a logdir (the warm-started run keeps its own checkpoints)")
        trains = algorithm(self.agent)
        if self.architecture == "impala" and (not trains.actor_policy or self.learner_frame_stack != 1):
            raise ValueError(
                "architecture impala trains an agent whose policy actors run (agent impala) on the actors' observations (learner_frame_stack 1)"
            )
        if self.architecture == "impala" and is_football(self.env) and self.football.right_players > 0:
            raise ValueError(
                "architecture impala keeps no sides: the right players' returns would count in the mean return; "
                "play --football.right-players with architecture seed"
            )
        if self.architecture == "impala" and self.atari.episodic_life:
            raise ValueError(NOT_IN_IMPALA_MODE)
        acting = self.training.acting
        if acting == "replay" and acting not in self.acting_modes:
            raise ValueError(
                f"training.acting replay paces acting against a replay ratio; agent {self.agent} trains from no replay"
            )
        if acting not in self.acting_modes:
            raise ValueError(
                f"training.acting {acting} paces SEED actors against V-trace's train batches "
                "(agent impala, architecture seed); R2D2's replay and IMPALA-mode uploads run async"
            )
        if self.learner_frame_stack < 1:
            raise ValueError(f"learner_frame_stack must be >= 1, got {self.learner_frame_stack}")
        opponent = self.self_play.opponent
        capable = trains.actor_policy if opponent == "frozen" else trains.separate_sides
        if opponent != "policy" and (not capable or self.architecture != "seed" or not is_football(self.env) or self.football.right_players < 1):
            raise ValueError(
                f"self_play.opponent {opponent} plays the right side of a football: id with --football.right-players >= 1 "
                f"by {'a frozen copy of' if opponent == 'frozen' else 'a second'} V-trace policy (agent impala, architecture seed)"
            )
        if self.return_window < 1:
            raise ValueError(f"return_window must be >= 1, got {self.return_window}")
        if not (self.metrics_every_s > 0 and self.log_every_s > 0):
            raise ValueError("metrics_every_s and log_every_s must be positive")


    @property
    def acting_modes(self) -> tuple[ActingMode, ...]:
        """The acting modes this learner paces (``training.acting``, also live): async, V-trace's on-policy modes with
        SEED actors, and a replay's."""
        trains = algorithm(self.agent)
        on_policy = tuple(mode for mode in ("bounded", "synchronous") if mode in trains.pacing and self.architecture == "seed")
        return ("async", *on_policy, *(("replay",) if "replay" in trains.pacing else ()))

    @property
    def live_settings(self) -> tuple[LiveSetting, ...]:
        """The settings that may change while this learner trains: its algorithm's, then acting's."""
        return algorithm(self.agent).live + acting_settings(self.acting_modes)

RENAMED_SECTIONS = {"vtrace": "impala"}
"""Sections of earlier versions, by name: ``--vtrace.lr`` is ``--impala.lr`` (and ``--agent vtrace`` is impala)."""

# Flags of the flat config this one replaced, by leaf name; ``cli.upgrade_flags`` maps them.
RENAMED_FLAGS = {
    "device": "devices",
    **{name: f"server.{name}" for name in (
        "host", "port", "token", "tls-cert", "tls-key", "max-streams", "max-envs", "max-envs-per-stream",
        "max-envs-per-actor", "hello-timeout-s", "max-abs-reward", "max-abs-observation", "slot-grace-s",
        "max-message-bytes", "shutdown-grace-s",
    )},
    "console": "console.enabled",
    "no-console": "console.no-enabled",
    "console-host": "console.host",
    "console-port": "console.port",
    "console-token": "console.token",
    "console-allowed-hosts": "console.allowed-hosts",
    "stop-at-return": "stop.at-return",
    "stop-after-frames": "stop.after-frames",
    "stop-after-seconds": "stop.after-seconds",
}
