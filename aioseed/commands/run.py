"""``aioseed run``: a learner (built by ``aioseed.compose.learner``) and its actors on this machine, in one
command; ``RunConfig`` is what the benches, sweeps and presets start from."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Literal

import structlog

from aioseed.clients.actor import ActorConfig
from aioseed.commands.launchers import Strategy, launch_actors
from aioseed.commands.launchers.stop import ACTORS_EXITED
from aioseed.commands.signals import stop_on_signals
from aioseed.compose.config import LearnerConfig
from aioseed.envs.football import is_football
from aioseed.envs.registry import EnvBackend
from aioseed.server.config import ServerConfig, StopConfig

if TYPE_CHECKING:
    from aioseed.server.learner import Learner

log = structlog.get_logger()

PresetName = Literal[
    "none",
    "atari",
    "atari-noframeskip",
    "atari-fast",
    "atari-ppo",
    "atari-r2d2",
    "catch",
    "football-academy",
    "football-academy-ppo",
    "football-academy-simple115",
    "football-academy-smm",
    "mujoco-ppo",
    "mujoco-sac",
    "mujoco-td3",
    "r2d2-cartpole",
]
"""The presets: aioseed/presets/NAME.toml (a test checks that each file is named here and the other way round)."""


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A learner plus local actor processes over loopback, in one command."""

    preset: PresetName = "none"
    """Start from a named preset (aioseed/presets/NAME.toml); every other flag given overrides the preset's
    value. atari: V-trace with the Nature CNN on ALE/Pong-v5 (any ALE/ id with --learner.env);
    atari-noframeskip: the same on the references' protocol (no sticky actions); atari-ppo: CleanRL's PPO
    recipe (synchronous acting, 8 envs x 128 steps, shuffled transitions) on that protocol; atari-fast: that
    recipe at this CPU's speed (bfloat16, bounded acting, 32 envs, half the epochs: Pong's +18 in under 30
    minutes on 2 cores); atari-r2d2: R2D2 sized for 2 cores on that protocol (LSTM 256, T 40, burn-in
    20, replay ratio paced by acting); catch: the
    same network on aioseed/Catch-v0; football-academy: V-trace on Google Research Football's
    academy_empty_goal_close from the Super Mini Map with SEED's Football ResNet, on EnvPool's port of the
    engine (no build); football-academy-simple115: the same from the simple115v2 state (MLP) on gfootball;
    football-academy-ppo: MAPPO-style PPO (synchronous) with 3 controlled players on
    academy_pass_and_shoot_with_keeper, from simple115v2;
    football-academy-smm: from the stacked Super Mini Map on gfootball, as SEED ran it; mujoco-ppo, mujoco-sac and mujoco-td3: CleanRL's PPO,
    SAC and TD3 recipes for continuous control on HalfCheetah-v5 (any MuJoCo id with --learner.env); r2d2-cartpole:
    R2D2 sized for CartPole-v1."""
    learner: LearnerConfig = LearnerConfig(server=ServerConfig(host="127.0.0.1", port=0), stop=StopConfig(at_return=475.0))
    num_actors: int = 2
    """Actor processes to spawn."""
    envs_per_actor: int = 128
    """Environments per actor process."""
    envs_per_message: int = 64
    """Env rows per stream message (K)."""
    evaluation_envs: int = 0
    """Envs of one more actor process started with --evaluation: never learned from, they report
    charts/eval_return (0: no evaluation actor)."""
    evaluation_video_every: int = 10
    """With evaluation envs and a logdir: the evaluation actor records its first episode, then every Nth,
    to LOGDIR/videos, and the console shows the newest (0: no clips)."""
    architecture: Literal["seed", "impala", "sebulba", "anakin"] = "seed"
    """seed: a learner serving actors over gRPC (here on loopback). impala: the baseline SEED improves on:
    the actors pull the parameters, run the policy on their own CPU and upload finished unrolls. sebulba:
    the actors' envs step in threads of the learner's process and hand their rows to its batcher, with no
    gRPC. anakin: the env written in TensorFlow (CartPole-v1, aioseed/Catch-v0), acting, stepping and
    learning for num_actors x envs_per_actor envs compiled into one program, with no actors, streams or
    console."""
    env_backend: EnvBackend = "default"
    """What steps the actors' envs: default, or envpool (EnvPool's C++ thread pool; aioseed[envpool])."""
    launcher: Literal["processes", "ray"] = "processes"
    """How the actors start: processes spawned by this one, or Ray actors on a Ray instance started
    on this machine (needs aioseed[ray]; Ray restarts actors that die)."""

    def __post_init__(self) -> None:
        if min(self.num_actors, self.envs_per_actor, self.envs_per_message) < 1 or self.evaluation_envs < 0:
            raise ValueError("num_actors, envs_per_actor and envs_per_message must be >= 1, evaluation_envs >= 0")
        if self.evaluation_video_every < 0:
            raise ValueError(f"evaluation_video_every must be >= 0, got {self.evaluation_video_every}")
        if self.architecture == "anakin" and self.env_backend != "default":
            raise ValueError("--architecture anakin steps its env in TensorFlow: --env-backend applies to actors")
        if self.architecture == "impala" and (self.evaluation_envs or self.launcher != "processes"):
            raise ValueError("architecture impala runs its actors as processes, without evaluation envs")
        self.served_learner  # noqa: B018 -- a combination the served learner refuses (impala with bounded acting) is a flag mistake too

    @property
    def served_learner(self) -> LearnerConfig:
        """The learner config this run actually serves: ``learner`` with R2D2's epsilon schedule spread
        over exactly the local envs (``learner.r2d2.epsilon_envs`` as given is ignored), in IMPALA mode
        for ``architecture`` impala."""
        football = self.learner.football
        rows = football.left_players + football.right_players if is_football(self.learner.env) else 1
        envs = self.num_actors * self.envs_per_actor * rows
        architecture = "impala" if self.architecture == "impala" else self.learner.architecture
        r2d2 = dataclasses.replace(self.learner.r2d2, epsilon_envs=envs)
        return dataclasses.replace(self.learner, r2d2=r2d2, architecture=architecture)

    @property
    def launch_strategy(self) -> Strategy:
        """How the local actors start (``aioseed.commands.launchers``): Sebulba's threads, or by ``launcher``."""
        return "threads" if self.architecture == "sebulba" else self.launcher

    def actor_configs(self, port: int) -> list[ActorConfig]:
        """The local actors: ``num_actors`` that train, then the evaluation actor if any."""
        configs = [self.actor_config(port, i) for i in range(self.num_actors)]
        if self.evaluation_envs:
            configs.append(self.actor_config(port, self.num_actors, evaluation=True))
        return configs

    def actor_config(self, port: int, index: int, evaluation: bool = False) -> ActorConfig:
        seed = None if self.learner.seed is None else self.learner.seed * 1000 + index * self.envs_per_actor
        envs = self.evaluation_envs if evaluation else self.envs_per_actor
        return ActorConfig(
            learner=f"127.0.0.1:{port}",
            env=self.learner.env,
            env_kwargs=self.learner.env_kwargs,
            num_envs=envs,
            envs_per_message=min(self.envs_per_message, envs),
            evaluation=evaluation,
            token=self.learner.server.token,
            token_file=self.learner.server.token_file,
            seed=seed,
            env_backend=self.env_backend,
            name=f"local-eval-{index}" if evaluation else f"local-{index}",
            atari=dataclasses.replace(self.learner.atari, stack=1)
            if self.learner.learner_frame_stack > 1
            else self.learner.atari,
            football=self.learner.football,
            architecture="impala" if self.architecture == "impala" else "seed",
            **self._clips() if evaluation else {},
        )

    def _clips(self) -> dict[str, object]:
        """The evaluation actor's clips: into the learner's LOGDIR/videos, which its console shows."""
        if self.learner.logdir is None or not self.evaluation_video_every:
            return {}
        return {"video_dir": self.learner.logdir / "videos", "video_every": self.evaluation_video_every}


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """How a local run ended."""

    frames: int
    train_steps: int
    mean_return: float
    stop_reason: str | None
    stop_time: float | None
    """Wall-clock time (time.time()) at which the stop condition was met."""
    stop_frames: int | None
    """Frames when the stop condition was met (``frames`` also counts the drain)."""
    stop_mean_return: float
    """Mean return when the stop condition was met."""
    history: list[dict[str, float]]
    """The learner's metric snapshots."""
    checkpoint_error: str | None = None
    """Why the final checkpoint was not written (None: it was, or the run keeps none)."""


async def train_locally(config: RunConfig) -> RunSummary:
    """A learner and ``num_actors`` actors (processes on loopback, Ray actors, or Sebulba's threads in
    this process), until a stop condition or signal."""
    from aioseed.commands.terminal import showing

    learner = build_learner(config.served_learner, run=config)
    port = await learner.start()
    stop_on_signals(learner.request_stop)
    showing_progress = showing(learner, config.learner.stop, config.learner.env, config.learner.display)
    async with showing_progress, asyncio.TaskGroup() as group:
        group.create_task(learner.run(), name="learner")
        stop_local_actors = await launch_actors(config.launch_strategy, config.actor_configs(port), learner, group)
        try:
            log.info("actors_started", count=config.num_actors, envs=config.num_actors * config.envs_per_actor, port=port)
            await learner.stopped()
        finally:
            # Local actors go first, so the learner's drain sees their streams end rather than reconnects.
            await stop_local_actors()
    return RunSummary(
        frames=learner.frames,
        train_steps=learner.train_steps,
        mean_return=learner.mean_return,
        stop_reason=learner.stopping.reason,
        stop_time=learner.stopping.time,
        stop_frames=learner.stopping.frames,
        stop_mean_return=learner.stopping.mean_return,
        history=learner.series(0.0),
        checkpoint_error=learner.final_checkpoint_error,
    )


def run_anakin(config: RunConfig) -> int:
    """``aioseed run --architecture anakin``."""
    from aioseed.anakin.run import train

    result = train(config.served_learner, config.num_actors * config.envs_per_actor, run=config)
    log.info("run_finished", frames=result["frames"], mean_return=round(result["mean_return"], 1), logdir=str(config.learner.logdir))
    return 0


async def run_local(config: RunConfig) -> int:
    """``aioseed run``: 0, or 1 when its actors all exited before a stop condition or the final checkpoint was
    not written."""
    summary = await train_locally(config)
    log.info(
        "run_finished",
        frames=summary.frames,
        mean_return=round(summary.mean_return, 1),
        train_steps=summary.train_steps,
        logdir=str(config.learner.logdir),
    )
    return 1 if summary.stop_reason == ACTORS_EXITED or summary.checkpoint_error else 0


def main(config: RunConfig) -> int:
    """``aioseed run``: Anakin's one compiled program, or a learner serving local actors."""
    if config.architecture == "anakin":
        return run_anakin(config)
    import uvloop

    return uvloop.run(run_local(config))


def build_learner(config: LearnerConfig, run: RunConfig | None = None) -> Learner:
    """``aioseed.compose.learner.build``, imported when needed: actor processes never load TensorFlow."""
    from aioseed.compose.learner import build

    return build(config, run)
