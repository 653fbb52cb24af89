"""``aioseed serve``: a trained policy served to actors over the learner's own ``Act`` protocol, without training.

The learner's stages serve it: the same batcher, token, TLS, limits, health service, console and Prometheus
metrics. Every stream's rows are evaluation rows, so nothing is stored and nothing trains: R2D2 acts at its
evaluation epsilon (0 with ``--greedy``), SAC with its mean action or a sample, TD3 with or without its exploration noise, V-trace samples (its most
likely action with ``--greedy``). With ``--watch`` the newest checkpoint of the run's logdir is loaded
when one appears, between batches, and the streams carry on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import pathlib
from typing import TYPE_CHECKING

import structlog

from aioseed.compose import config_file
from aioseed.compose.config import Display, LearnerConfig
from aioseed.errors import MissingFile, UserError
from aioseed.server.batching.batcher import BatcherConfig
from aioseed.server.config import ConsoleConfig, ServerConfig, StopConfig

if TYPE_CHECKING:
    from aioseed.server.acting.served import ServedPolicy
    from aioseed.server.learner import Learner
    from aioseed.server.training.trainer import Progress

log = structlog.get_logger()


@dataclasses.dataclass(frozen=True)
class ServeConfig:
    """Serve a trained policy to actors (the learner's Act protocol), without training."""

    checkpoint: pathlib.Path = pathlib.Path("logs/cartpole")
    """A run's logdir (its latest checkpoint), its checkpoints/ or one checkpoint (logs/x/checkpoints/ckpt-160)."""
    greedy: bool = False
    """V-trace: the most likely action instead of a sample (Box: the squashed mean); R2D2: epsilon 0; SAC: the mean; TD3: no exploration noise."""
    epsilon: float = 0.001
    """R2D2's exploration when not greedy (SEED's evaluation epsilon)."""
    watch: bool = False
    """Load the newest checkpoint of the run's logdir when one appears (between batches; streams carry on)."""
    watch_every_s: float = 5.0
    """How often --watch looks for a newer checkpoint."""
    device: str = "auto"
    """TensorFlow device of the policy: auto (the first GPU, else the CPU), cpu, gpu or a name such as /GPU:1."""
    server: ServerConfig = ServerConfig()
    batcher: BatcherConfig = BatcherConfig()
    console: ConsoleConfig = ConsoleConfig()
    display: Display = "auto"
    """Progress on the terminal: live, lines (key=value log lines) or auto (live on a terminal)."""
    log_every_s: float = 2.0
    """Interval of progress log lines."""

    def __post_init__(self) -> None:
        if not 0 <= self.epsilon <= 1:
            raise ValueError(f"epsilon must be in [0, 1], got {self.epsilon}")
        if self.watch_every_s <= 0 or self.log_every_s <= 0:
            raise ValueError("watch_every_s and log_every_s must be positive")


def serving_settings(saved: LearnerConfig, config: ServeConfig) -> LearnerConfig:
    """The run's learner settings as a server: this command's ports, batcher and console; no logdir (nothing is
    written), no stop condition, acting unpaced (no train step is ever waited for), SEED mode."""
    return dataclasses.replace(
        saved,
        server=config.server, batcher=config.batcher, console=config.console, display=config.display,
        log_every_s=config.log_every_s, logdir=None, tensorboard=False, tracking="none", stop=StopConfig(),
        architecture="seed", training=dataclasses.replace(saved.training, acting="async"),
        self_play=dataclasses.replace(saved.self_play, opponent="policy"),
    )


def build(config: ServeConfig) -> tuple[Learner, ServedPolicy, pathlib.Path]:
    """The served learner, its policy and the checkpoint directory --watch looks at."""
    from aioseed.compose.learner import assemble, learner_specs
    from aioseed.compose.policy import acting_function, acting_settings, locate, restored_agent
    from aioseed.server.acting.served import ServedPolicy
    from aioseed.server.training.checkpoint import Checkpointer
    from aioseed.server.training.checkpoint_files import latest_checkpoint

    logdir, checkpoint = locate(config.checkpoint)
    saved = acting_settings(config_file.saved_learner(logdir), config.greedy, config.epsilon)
    spec, seen = learner_specs(saved)
    directory = logdir / "checkpoints"
    # Read once, before the restore: a checkpoint written meanwhile is --watch's to load, not a label for these weights.
    path = checkpoint or latest_checkpoint(directory)
    if path is None:
        raise MissingFile(f"no checkpoint under {directory}: has the run saved one yet?")
    agent, progress = restored_agent(saved, seen, logdir, path, config.device)

    def restore(path: str) -> Progress | None:
        return Checkpointer(directory, agent.checkpoint_objects()).restore(path)

    served = ServedPolicy(
        act=acting_function(agent, config.greedy), restore=restore, checkpoint=path, frames=progress.frames,
        train_steps=progress.train_steps,
    )
    learner = assemble(serving_settings(saved, config), spec, agent, served=served)
    learner.set_version(progress.train_steps)
    log.info("serving", checkpoint=path, frames=progress.frames, train_steps=progress.train_steps, greedy=config.greedy)
    return learner, served, directory


async def watch(served: ServedPolicy, learner: Learner, directory: pathlib.Path, every_s: float) -> None:
    """Loads the run's newest checkpoint whenever it changes (a checkpoint is complete once it is the latest). A
    failure to read the state file or to load the checkpoint (the run restarted with other flags, a file gone,
    truncated or overwritten) is logged once and skipped: the one served stays, and so does this process."""
    from aioseed.server.training.checkpoint_files import latest_checkpoint

    tried, unreadable = served.checkpoint, ""
    while True:
        await asyncio.sleep(every_s)
        try:
            latest = await asyncio.to_thread(latest_checkpoint, directory)
        except UserError as exc:  # a damaged state file: logged when its error changes, not every poll
            if str(exc) != unreadable:
                unreadable = str(exc)
                log.error("checkpoint_state_unreadable", serving=served.checkpoint, error=unreadable)
            continue
        unreadable = ""
        if latest is None or latest == tried:
            continue
        tried = latest
        try:
            await asyncio.to_thread(served.reload, latest)
        except Exception as exc:  # whatever a file did to the restore, serving goes on (the restore is all or nothing)
            log.error("checkpoint_reload_failed", path=latest, serving=served.checkpoint, error=str(exc)[:300])
            continue
        learner.set_version(served.train_steps)


def main(config: ServeConfig) -> int:
    """``aioseed serve``'s exit status (``serve``)."""
    import uvloop

    return uvloop.run(serve(config))


async def serve(config: ServeConfig) -> int:
    """Serves until SIGINT/SIGTERM, then stops in order and exits 0."""
    from aioseed.commands.signals import stop_on_signals
    from aioseed.commands.terminal import showing

    learner, served, directory = build(config)
    gc.freeze()  # as ``aioseed learner`` does (commands.learner.serve): the collections refusals cause skip TensorFlow's objects
    stop_on_signals(learner.request_stop)
    async with showing(learner, StopConfig(), learner.config.env, config.display), asyncio.TaskGroup() as group:
        watcher = group.create_task(watch(served, learner, directory, config.watch_every_s)) if config.watch else None
        await learner.run()
        if watcher is not None:
            watcher.cancel()
    return 0
