"""Configuration of the learner daemon."""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Literal

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.algos.registry import algorithm
from aioseed.algos.sac.config import SacConfig
from aioseed.envs.atari import AtariConfig
from aioseed.envs.football import FootballConfig, is_football
from aioseed.envs.life_loss import NOT_IN_IMPALA_MODE
from aioseed.envs.registry import env_kwargs
from aioseed.server.batching.autotune import BatchingConfig
from aioseed.server.batching.batcher import BatcherConfig
from aioseed.server.reporting.tracking import TrackerConfig, TrackingName
from aioseed.server.training.trainer import TrainingConfig
from aioseed.tokens import token_of


@dataclasses.dataclass(frozen=True)
class ServerConfig:
    """The gRPC port actors connect to, and the limits that keep one client from hurting the others."""

    host: str = "0.0.0.0"
    """Address the gRPC server binds."""
    port: int = 8686
    """gRPC port (0 picks a free one)."""
    token: str | None = None
    """Shared secret actors must send (gRPC metadata authorization: Bearer TOKEN); None disables auth."""
    token_file: pathlib.Path | None = None
    """File whose first line is the token, instead of --server.token (which the process list shows)."""
    tls_cert: pathlib.Path | None = None
    """PEM certificate chain of the gRPC port; with tls_key, the port serves TLS only."""
    tls_key: pathlib.Path | None = None
    """PEM private key for tls_cert."""
    max_streams: int = 8192
    """Concurrent actor streams served, counting those still owing their hello; more get
    RESOURCE_EXHAUSTED and existing ones carry on."""
    max_envs: int = 65536
    """Env slots the learner will hand out in total."""
    max_envs_per_stream: int = 1024
    """Largest K (envs per message) one stream may declare."""
    max_envs_per_actor: int = 4096
    """Env slots one actor connection (one ``aioseed actor`` process: its channel and all its streams)
    may hold at once; behind a proxy that merges connections, raise it."""
    hello_timeout_s: float = 10.0
    """A stream that sends no hello within this many seconds is closed (DEADLINE_EXCEEDED)."""
    message_timeout_s: float = 120.0
    """After the hello, a stream whose next message has not arrived this many seconds after the learner's
    answer is closed (DEADLINE_EXCEEDED): a trickled or abandoned stream cannot hold its slots. The clock starts
    as the answer is handed over, so a stream that stops taking its answers in is closed too."""
    max_abs_reward: float = 1e6
    """Rows with a larger |reward| are refused (INVALID_ARGUMENT): finite but huge rewards overflow the loss."""
    max_abs_observation: float = 1e6
    """Rows of float observations with a larger |element| are refused, as for max_abs_reward."""
    slot_grace_s: float = 30.0
    """A disconnected actor's slots stay reserved this long for its reconnect (while other slots are free: with
    none left, the oldest reservation goes to a new actor)."""
    max_message_bytes: int = 64 * 1024 * 1024
    """Largest gRPC message accepted or sent. A hello of more envs than one message of this size holds is refused."""
    params_chunk_bytes: int = 1024 * 1024
    """IMPALA mode: parameter downloads are cut into messages of at most this many tensor bytes (and at
    most half of max_message_bytes)."""
    max_params_calls: int = 64
    """IMPALA mode: parameter downloads served at once; more get RESOURCE_EXHAUSTED."""
    max_upload_bytes: int = 512 * 1024 * 1024
    """IMPALA mode: bytes of unroll uploads the learner holds at once (parsed or waiting for queue room),
    across all streams; an upload past it gets RESOURCE_EXHAUSTED, so a flood of large uploads cannot
    grow the learner's memory beyond it."""
    max_params_calls_per_actor: int = 4
    """IMPALA mode: parameter downloads one actor connection may hold at once (aioseed's actor pulls one
    at a time), so that no client can take every download slot; more get RESOURCE_EXHAUSTED."""
    params_send_timeout_s: float = 10.0
    """IMPALA mode: a parameter download not taken in within this many seconds ends with DEADLINE_EXCEEDED,
    freeing its slot (a client that stops reading)."""
    params_stall_s: float = 1.0
    """IMPALA mode: a parameter download whose chunk has not been taken in after this many seconds no
    longer counts against max_params_calls, so stalled clients cannot keep healthy actors' downloads
    out; at most max_params_calls stalled ones are kept (the oldest is ended first)."""
    keepalive_s: float = 10.0
    """The learner pings a connection after this many seconds without traffic; one that does not answer
    within keepalive_timeout_s is closed with its calls, so a peer that vanished without a reset frees
    its slots and downloads within seconds (gRPC's default waits two hours)."""
    keepalive_timeout_s: float = 5.0
    """Seconds a keepalive ping may go unanswered before the connection is closed."""
    shutdown_grace_s: float = 1.0
    """Seconds in-flight streams get to finish when the learner stops."""

    @property
    def actor_token(self) -> str | None:
        """The token actors must send: token, or the first line of token_file (read now)."""
        return token_of(self.token, self.token_file, "--server.token-file")

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"port must be in [0, 65535], got {self.port}")
        if self.token is not None and self.token_file is not None:
            raise ValueError("give the token as token or as token_file, not both")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("tls_cert and tls_key go together: the port serves TLS with both or plaintext with neither")
        if self.max_streams < 1:
            raise ValueError(f"max_streams must be >= 1, got {self.max_streams}")
        if min(self.max_envs, self.max_envs_per_stream, self.max_envs_per_actor) < 1:
            raise ValueError("max_envs, max_envs_per_stream and max_envs_per_actor must be >= 1")
        if min(self.params_chunk_bytes, self.max_params_calls, self.max_params_calls_per_actor, self.max_upload_bytes) < 1:
            raise ValueError("params_chunk_bytes, max_params_calls, max_params_calls_per_actor and max_upload_bytes must be >= 1")
        if min(self.params_send_timeout_s, self.params_stall_s, self.keepalive_s, self.keepalive_timeout_s) <= 0:
            raise ValueError("params_send_timeout_s, params_stall_s, keepalive_s and keepalive_timeout_s must be positive")
        if min(self.hello_timeout_s, self.message_timeout_s) <= 0:
            raise ValueError("hello_timeout_s and message_timeout_s must be positive")
        if not (self.max_abs_reward > 0 and self.max_abs_observation > 0):
            raise ValueError("max_abs_reward and max_abs_observation must be positive: every row would be refused")


@dataclasses.dataclass(frozen=True)
class ConsoleConfig:
    """The web console: live metrics and control over HTTP."""

    enabled: bool = True
    """Serve the console (--console.no-enabled turns it off)."""
    host: str = "127.0.0.1"
    """Address the console binds. Off loopback, reading needs the token too."""
    port: int = 8080
    """Console HTTP port (0 picks a free one)."""
    token: str | None = None
    """Token for the control endpoints and the live feed (None: a random one, printed in the console URL)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names the console answers to besides IP literals and localhost (others get 400, against DNS
    rebinding); * allows any, e.g. behind a proxy that checks Host itself."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"console port must be in [0, 65535], got {self.port}")


@dataclasses.dataclass(frozen=True)
class StopConfig:
    """When the learner stops by itself (besides SIGINT/SIGTERM and the console); the first met wins."""

    at_return: float | None = None
    """Once the mean return over return_window episodes reaches this."""
    after_frames: int | None = None
    """After this many env frames."""
    after_seconds: float | None = None
    """After this many seconds of serving."""

    def __post_init__(self) -> None:
        if self.after_frames is not None and self.after_frames < 1:
            raise ValueError(f"after_frames must be >= 1, got {self.after_frames}")
        if self.after_seconds is not None and not self.after_seconds > 0:
            raise ValueError(f"after_seconds must be positive, got {self.after_seconds}")


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Who plays the right-side players of a multi-player game (Football with --football.right-players > 0)."""

    opponent: Literal["policy", "frozen", "separate"] = "policy"
    """policy: the learner's own policy, trained on both sides' rows. frozen: self-play against an earlier
    version: a copy of the policy, frozen between refreshes and checkpointed with the run; its rows are
    never trained on. separate: one policy per side, of the same architecture, each trained on its own
    side's rows (checkpointed together; eval and serve act on each row with its side's). V-trace/PPO agents."""
    refresh_frames: int = 500_000
    """frozen: frames between refreshes, each of which copies the learner's policy into the opponent."""

    def __post_init__(self) -> None:
        if self.refresh_frames < 1:
            raise ValueError(f"self_play.refresh_frames must be positive, got {self.refresh_frames}")


Display = Literal["auto", "live", "lines"]
"""Progress on the terminal (``aioseed.terminal``)."""


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
    """What the network's torso computes in, for inference and the train step: float32, or bfloat16 (Keras's
    mixed_bfloat16: the weights, the heads, an LSTM core and the loss stay float32). bfloat16 pays on GPUs
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

    agent: Literal["impala", "r2d2", "sac"] = "impala"
    """The algorithm: IMPALA (V-trace, and PPO-style sample reuse) from a bounded unroll queue, R2D2 from
    prioritized replay (Discrete actions), or SAC from uniform replay (Box actions)."""
    impala: ImpalaConfig = ImpalaConfig()
    r2d2: R2D2Config = R2D2Config()
    """R2D2's settings: SEED's Atari ones by default; --preset r2d2-cartpole sizes them for CartPole-v1."""
    sac: SacConfig = SacConfig()
    """SAC's settings: CleanRL's by default; --preset mujoco-sac sets the training shape for MuJoCo."""

    atari: AtariConfig = AtariConfig()
    """Preprocessing of ALE/ ids: defines the spec served (aioseed run's actors use it too)."""
    football: FootballConfig = FootballConfig()
    """Observations, rewards and controlled players of football:<scenario> ids: define the spec served (as atari)."""
    self_play: SelfPlayConfig = SelfPlayConfig()
    learner_frame_stack: int = 1
    """>1: the learner stacks this many frames per env itself and Atari actors send only the newest
    (run them with --atari.stack 1): 4x less traffic, the same observations for the policy."""

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
        if acting == "replay" and "replay" not in trains.pacing:
            raise ValueError("training.acting replay paces acting against SAC's replay ratio (agent sac)")
        if acting in ("bounded", "synchronous") and (acting not in trains.pacing or self.architecture != "seed"):
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
