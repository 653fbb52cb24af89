"""The composition root: one config -> env spec, agent, the learner's stages, its console.

``build`` is what ``aioseed learner``, ``aioseed run``, the benchmarks and the tests
call; ``assemble`` wires the stages around a given agent (the benchmarks' null agent).
Nothing else constructs server parts, and the server never imports the console.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

from aioseed.algos.agent import Agent
from aioseed.algos.registry import ALGORITHMS, algorithm
from aioseed.compose import config_file
from aioseed.compose.config import LearnerConfig
from aioseed.compose.devices import place
from aioseed.compose.live import changes_note, live_settings, with_sections
from aioseed.compose.run_info import describe
from aioseed.compose.sources import build_source, pacing_for, replay_settings
from aioseed.console.server import ConsoleServer
from aioseed.envs.atari import is_atari
from aioseed.envs.registry import env_kwargs, env_spec
from aioseed.server.acting.inference import InferenceLoop
from aioseed.server.acting.step import StepResult, acting_for, unroll_columns
from aioseed.server.batching.batcher import Batch, Batcher
from aioseed.server.learner import Learner
from aioseed.server.reporting.episode_window import EpisodeWindow
from aioseed.server.reporting.stats import Stats
from aioseed.server.reporting.tracking import Sender
from aioseed.server.stages import Stages
from aioseed.server.stopping import Stopping
from aioseed.server.training.checkpoint import Checkpointer, WarmStart
from aioseed.server.training.trainer import Trainer
from aioseed.server.trajectories.replay_feed import ReplayFeed
from aioseed.server.transport.endpoint import GrpcEndpoint, server_options
from aioseed.server.transport.params import ParamsPublisher
from aioseed.server.transport.protocol import RowBounds, RowParser
from aioseed.server.transport.service import LearnerService
from aioseed.server.transport.slots import SlotTable
from aioseed.server.transport.streams import StreamLimits, envs_that_fit
from aioseed.server.transport.upload_history import Taken, UploadHistory
from aioseed.server.transport.uploads import UnrollParser, Uploads
from aioseed.spec import EnvSpec
from aioseed.types import Unroll

if TYPE_CHECKING:
    from aioseed.algos.replicas import Replicas
    from aioseed.server.acting.opponent import FrozenOpponent
    from aioseed.server.acting.served import ServedPolicy

log = structlog.get_logger()


def learner_specs(config: LearnerConfig) -> tuple[EnvSpec, EnvSpec]:
    """(what actors send, what the policy sees): they differ with learner-side frame stacking."""
    stack = config.learner_frame_stack
    if stack == 1:
        spec = env_spec(config.env, config.atari, config.football, env_kwargs(config.env_kwargs))
        return spec, spec
    if not is_atari(config.env):
        raise ValueError(f"learner_frame_stack needs an ALE/ env, got {config.env}")
    wire = env_spec(config.env, dataclasses.replace(config.atari, stack=1))
    return wire, dataclasses.replace(wire, observation_shape=(stack, *wire.observation_shape[1:]))


def build_agent(config: LearnerConfig, spec: EnvSpec, replicas: Replicas) -> Agent:
    """The agent ``config.agent`` names, for the observations the policy sees, training on ``replicas``."""
    check_batch_shares(config, replicas)
    trains = algorithm(config.agent)
    if not trains.learns(spec.action_space):
        learners = [name for name, entry in ALGORITHMS.items() if entry.learns(spec.action_space)]
        raise ValueError(f"--agent {config.agent} cannot learn this env's {spec.action_space.describe()}: use --agent {' or '.join(learners)}")
    sides = 2 if config.self_play.opponent == "separate" else 1
    return trains.make_agent(settings(config), spec, replicas, seed=config.seed, precision=config.precision, sides=sides)


def settings(config: LearnerConfig) -> Any:
    """The settings of the algorithm ``config.agent`` names (its section of the config)."""
    return algorithm(config.agent).settings(config)


def check_batch_shares(config: LearnerConfig, replicas: Replicas) -> None:
    """Every update's batch splits into equal shares, one per training device."""
    training = config.training
    replicas.check_divides(training.batch_size, "training.batch_size")
    split = algorithm(config.agent).split(settings(config), training.batch_size, training.unroll_length)
    if not split.fits(replicas.count):
        raise ValueError(
            f"{split.what} must split into {config.agent}.minibatches = {split.minibatches} equal minibatches "
            f"that are multiples of the {replicas.count} training devices"
        )


def warm_start(config: LearnerConfig) -> WarmStart | None:
    """What ``--init-checkpoint`` loads: the networks, and with ``--init-optimizer`` the optimizer; with a policy
    per side (``self_play.opponent separate``), the right side's too."""
    if config.init_checkpoint is None:
        return None
    names = ("network", "target_network", *(("optimizer",) if config.init_optimizer else ()))
    if config.self_play.opponent == "separate":
        from aioseed.algos.impala.sides import RIGHT_PREFIX

        names = (*names, *(RIGHT_PREFIX + name for name in names))
    return WarmStart(config.init_checkpoint, names)


def build(config: LearnerConfig, run: object | None = None) -> Learner:
    """Devices, spec from the env, the agent, checkpoints, then ``assemble``. logdir/config.toml gets
    ``run`` (the ``aioseed run`` config this learner serves) if given, else ``config``."""
    replicas = place(config.devices, config.inference_devices)  # first: logical CPUs precede TensorFlow's start
    import keras

    if config.seed is not None:
        # Keras 3 initializers draw from Python's and NumPy's generators: tf.random.set_seed alone
        # left the weights, and so the first policy, different on every run.
        keras.utils.set_random_seed(config.seed)
    spec, seen = learner_specs(config)
    agent = build_agent(config, seen, replicas)
    opponent = frozen_opponent(config, seen, agent)
    checkpointer, tracker = None, None
    if config.logdir is not None:
        logdir, kind = config.logdir, "learner" if run is None else "run"

        def save_config(sections: dict[str, Any] | None = None, changes: list[dict[str, Any]] | None = None) -> None:
            """config.toml; a resumed run's has the settings changed live up to its checkpoint, and says so."""
            saved = run or config
            if sections and changes:
                saved = with_sections(saved, sections)
            config_file.save(logdir, saved, kind, changes_note(changes) if changes else "")

        objects = {**agent.checkpoint_objects(), **(opponent.checkpoint_objects() if opponent is not None else {})}
        # A run that resumes writes config.toml once its checkpoint has restored: flags that do not fit it leave
        # the logdir as it was. A new run writes it now (a tracker uploads it as it starts).
        restored = on_restored(save_config, opponent, lambda: checkpointer.latest is None)
        checkpointer = Checkpointer(logdir / "checkpoints", objects, warm_start=warm_start(config), restored=restored)
        if checkpointer.latest is None:
            save_config()
        else:
            config_file.check_same_env(logdir, config.env)
        tracker = tracking_sender(config, config_file.document(run or config))
    log.info("learner_built", env=config.env, devices=list(replicas.training), logdir=str(config.logdir))
    learner = assemble(config, spec, agent, checkpointer, lanes=len(replicas.inference), replicas=replicas.count, tracker=tracker, opponent=opponent)
    if config.logdir is not None and learner.live is not None:
        learner.live.on_resumed = save_config
    return learner


def on_restored(save_config: Callable[[], None], opponent: FrozenOpponent | None, new_run: Callable[[], bool]) -> Callable[[], None]:
    """What runs once the checkpointer has restored, in the train thread: config.toml is written, and a new run's
    frozen opponent copies the learner again (``--init-checkpoint``'s weights arrive after its first copy; a
    resumed run's opponent has its own, restored)."""

    def restored() -> None:
        save_config()
        if opponent is not None and new_run():
            opponent.refresh(0, 0)

    return restored


def frozen_opponent(config: LearnerConfig, spec: EnvSpec, agent: Agent) -> FrozenOpponent | None:
    """Self-play's frozen copy of ``agent``'s policy (``self_play.opponent`` frozen), else None."""
    if config.self_play.opponent != "frozen":
        return None
    from aioseed.server.acting.opponent import FrozenOpponent

    trains = algorithm(config.agent)
    if trains.make_policy is None or spec.players[1] < 1:
        raise ValueError("self_play.opponent frozen needs an agent whose policy actors can run (impala) and right-side players (--football.right-players)")
    frozen = trains.make_policy(settings(config), spec, agent.replicas.inference_device, config.precision)
    return FrozenOpponent(agent, frozen, config.self_play.refresh_frames)


def refreshing(opponent: FrozenOpponent, stats: Stats) -> Callable[[int], None]:
    """The trainer's ``on_version`` in self-play: the opponent refreshes at the learner's frame count."""

    def after_update(version: int) -> None:
        opponent.after_update(version, stats.frames)

    return after_update


def assemble(
    config: LearnerConfig,
    spec: EnvSpec,
    agent: Agent,
    checkpointer: Checkpointer | None = None,
    lanes: int = 1,
    replicas: int = 1,
    tracker: Sender | None = None,
    opponent: FrozenOpponent | None = None,
    served: ServedPolicy | None = None,
) -> Learner:
    """The stages in data-path order around ``agent``, for actors that send ``spec``; ``lanes``: inference
    batches that may run at once (one per inference device); ``replicas``: training devices (a live minibatches
    change must split across them); ``opponent``: self-play's, for right-side rows;
    ``served``: aioseed serve's policy, which acts for every stream instead of ``agent`` and stores nothing."""
    stack = config.learner_frame_stack
    if stack > 1 and agent.spec.observation_shape != (stack, *spec.observation_shape[1:]):
        raise ValueError(f"learner_frame_stack={stack}: the agent sees {agent.spec.observation_shape}, actors send {spec.observation_shape}")
    stats = Stats(config.return_window, config.logdir is not None and config.tensorboard, spec.rows_per_env)
    stop = config.stop
    stopping = Stopping(
        stats, at_return=stop.at_return, after_frames=stop.after_frames, after_seconds=stop.after_seconds,
        after_training_seconds=stop.after_training_seconds,
    )
    batcher = Batcher(config.batcher)
    unrolls: asyncio.Queue[Unroll] = asyncio.Queue(config.training.queue_capacity)
    running = asyncio.Event()  # cleared while training is paused
    source = build_source(config, agent, unrolls, running)
    if checkpointer is not None:
        checkpointer.attach("episodes", EpisodeWindow(stats))
        if isinstance(source, ReplayFeed) and replay_settings(config).checkpoint:
            checkpointer.attach("replay", source.replay)
    server = config.server
    bounds = RowBounds(server.max_abs_reward, server.max_abs_observation)
    uploads = impala_uploads(config, spec, agent, unrolls, bounds, stats, stopping) if config.architecture == "impala" else None
    params = None if uploads is None else uploads.publisher
    pacing = pacing_for(config)
    on_version = None if params is None else params.publish
    if opponent is not None:  # self-play and IMPALA mode never meet (LearnerConfig refuses them together)
        on_version = refreshing(opponent, stats)
    trainer = Trainer(
        config.training, agent, source, on_step=stats.record_train, frames=lambda: stats.frames, on_version=on_version,
        pacing=pacing, running=running,
    )
    acting = acting_for(agent, spec, config.training.unroll_length, lambda: trainer.version, stack, opponent, served)
    inference = InferenceLoop(
        batcher, acting, unrolls, on_batch=on_batch(stats, stopping, spec.frames_per_step), lanes=lanes, pacing=pacing
    )
    longest = (lambda slots: uploads.parser(slots, shared=False)) if uploads is not None else lambda slots: RowParser(spec, slots, np.zeros(len(slots), np.uint64))
    limits = StreamLimits(
        streams=server.max_streams,
        envs_per_stream=envs_that_fit(lambda k: longest(np.arange(k, dtype=np.int32)).max_bytes, server.max_message_bytes, server.max_envs_per_stream),
        envs_per_actor=server.max_envs_per_actor,
        slots=server.max_envs,
        hello_timeout_s=server.hello_timeout_s,
        params_calls=server.max_params_calls,
        params_calls_per_peer=server.max_params_calls_per_actor,
        params_timeout_s=server.params_send_timeout_s,
        params_stall_s=server.params_stall_s,
        upload_bytes=server.max_upload_bytes,
        message_timeout_s=server.message_timeout_s,
    )
    slots = SlotTable(server.max_envs, server.slot_grace_s)
    service = LearnerService(
        spec=spec, slots=slots, inference=inference, limits=limits, on_connected_rows=batcher.set_connected_rows,
        on_latency=stats.record_latency, bounds=bounds, uploads=uploads, serving=served is not None,
    )
    batcher.set_connected_rows(0)
    tls = None if server.tls_cert is None or server.tls_key is None else (server.tls_cert, server.tls_key)
    options = server_options(server.max_streams, server.max_message_bytes, server.keepalive_s, server.keepalive_timeout_s)
    endpoint = GrpcEndpoint(
        servicer=service, host=server.host, port=server.port, options=options, token=server.actor_token, tls=tls
    )
    stages = Stages(
        endpoint=endpoint, service=service, batcher=batcher, inference=inference, source=source, trainer=trainer, stats=stats,
        stopping=stopping, checkpointer=checkpointer, write_summaries=summary_writer(config, stats, tracker), params=params,
        tracker=tracker, pacing=pacing,
        live=None if served is not None else live_settings(config, agent, trainer, source, pacing, stats, lambda: service.connected_envs, replicas),
    )

    def run_info() -> dict[str, Any]:  # when the console asks: only a training agent has replicas
        return describe(config, agent.replicas.training, agent.replicas.inference)

    return Learner(config=config, spec=spec, agent=agent, stages=stages, console=console_factory(config), run_info=run_info)


def impala_uploads(
    config: LearnerConfig,
    spec: EnvSpec,
    agent: Agent,
    unrolls: asyncio.Queue[Unroll],
    bounds: RowBounds,
    stats: Stats,
    stopping: Stopping,
) -> Uploads:
    """IMPALA mode: the parameters actors pull, and their uploads into the same unroll queue."""
    if not algorithm(config.agent).actor_policy:
        raise ValueError(f"architecture impala needs an agent whose policy actors can run, not {config.agent}")
    length = config.training.unroll_length
    columns, per_unroll = unroll_columns(agent, spec), agent.state_columns().keys()

    def on_unroll(taken: Taken) -> None:
        stats.record_frames(taken.env_steps * spec.frames_per_step)
        stats.partial_episodes += taken.partial
        record_episodes(stats, stopping, np.array(taken.returns, np.float64), np.array(taken.lengths, np.int64))

    return Uploads(
        params=ParamsPublisher(
            agent.policy_variables, min(config.server.params_chunk_bytes, config.server.max_message_bytes // 2)
        ),
        unrolls=unrolls,
        parser=lambda slots, history: UnrollParser(
            columns=columns, per_unroll=per_unroll, unroll_length=length, slots=slots, space=agent.spec.action_space,
            bounds=bounds, history=history,
        ),
        history=UploadHistory(per_unroll),
        on_unroll=on_unroll,
        agent_config=json.dumps(dataclasses.asdict(config.impala)),
        unroll_length=length,
    )


def on_batch(stats: Stats, stopping: Stopping, frames_per_step: int) -> Callable[[Batch, StepResult], None]:
    """After each inference batch: counters, ended episodes, then the stop conditions."""

    def record(batch: Batch, result: StepResult) -> None:
        boundaries = result.boundaries
        stats.record_batch(batch.size, batch.fill_seconds, result.seconds, boundaries.env_steps * frames_per_step)
        stats.partial_episodes += result.partial_episodes
        record_episodes(
            stats, stopping, boundaries.episode_returns, boundaries.episode_lengths, result.evaluation_episodes, result.right_episodes
        )

    return record


def record_episodes(
    stats: Stats,
    stopping: Stopping,
    returns: np.ndarray,
    lengths: np.ndarray,
    evaluation: np.ndarray | None = None,
    right: np.ndarray | None = None,
) -> None:
    """Episodes that ended (if any), then the stop conditions."""
    ended = len(returns) > 0
    if ended:
        stats.record_episodes(returns, lengths, evaluation, right)
    stopping.check(ended)


def summary_writer(
    config: LearnerConfig, stats: Stats, tracker: Sender | None = None
) -> Callable[[dict[str, float], int], None] | None:
    """TensorBoard's writer (with a logdir and ``config.tensorboard``: the snapshot, and each episode that
    ended since the last one), then the tracker's, if any."""
    tensorboard = None
    if config.logdir is not None and config.tensorboard:
        from aioseed.server.reporting.summaries import SummaryWriter

        tensorboard = SummaryWriter(config.logdir)
    if tensorboard is None and tracker is None:
        return None

    def write(snapshot: dict[str, float], frames: int) -> None:
        if tensorboard is not None:
            tensorboard(snapshot, frames, stats.take_ended())
        if tracker is not None:
            tracker.summary(snapshot, frames)

    return write


def tracking_sender(config: LearnerConfig, document: dict[str, Any]) -> Sender | None:
    """``--tracking``'s run, opened with the resolved config (``document``), or None."""
    from aioseed.server.reporting.tracking import Sender, open_tracker

    assert config.logdir is not None
    tracker = open_tracker(config.tracking, config.tracker, config.logdir, document)
    return None if tracker is None else Sender(tracker, config.logdir / "videos", config.tracker.checkpoints)


def console_factory(config: LearnerConfig) -> Callable[[Learner], ConsoleServer] | None:
    """The web console, steering the learner through ``aioseed.control.Control``."""
    console = config.console
    if not console.enabled:
        return None
    named = console.named_tokens()  # a bad file is refused as the learner is built

    def make(learner: Learner) -> ConsoleServer:
        return ConsoleServer(
            control=learner, host=console.host, port=console.port, token=console.token, allowed_hosts=console.allowed_hosts,
            named=named,
        )

    return make
