"""The learner: wires batcher, inference, unroll store, queue, trainer and gRPC server.

``Learner`` is the composition root of the server side. Its public methods are
the Python control API (the console drives the same calls): ``configure_batcher``,
``pause``/``resume``, ``set_learning_rate``, ``checkpoint_now`` and ``request_stop``; it is the
console's ``Control``.
"""

from __future__ import annotations

import asyncio
import contextlib
import pathlib
import time
from typing import Any

import grpc
import numpy as np
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from aioseed.algos.agent import Agent
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.server.auth import TokenInterceptor
from aioseed.server.batcher import Batch, Batcher, BatcherConfig
from aioseed.server.checkpoint import CheckpointRefused
from aioseed.server.config import LearnerConfig
from aioseed.server.core_states import CoreStates
from aioseed.server.env_table import EnvTable
from aioseed.server.frame_stack import FrameStacker
from aioseed.server.inference import InferenceLoop, StepResult
from aioseed.server.replay import Replay
from aioseed.server.protocol import RowBounds
from aioseed.server.replay_feed import ReplayFeed
from aioseed.server.service import LearnerService, StreamLimits
from aioseed.server.slots import SlotTable
from aioseed.server.source import Source, UnrollQueue
from aioseed.server.stats import History, Stats
from aioseed.server.training import Progress, Trainer
from aioseed.server.unroll_store import UnrollStore
from aioseed.spec import EnvSpec

log = structlog.get_logger()

SERVICE_NAME = "aioseed.v1.Learner"


def server_options(max_streams: int, max_message_bytes: int) -> list[tuple[str, int]]:
    """gRPC server options for ``max_streams`` concurrent streams of messages up to ``max_message_bytes``."""
    return [
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        # Calls that arrived but were not yet picked up by the handler loop. gRPC's defaults (soft
        # 1,000, hard 3,000) cancel calls at random when a few thousand actors connect at once, so
        # the queue is sized to the stream limit: every stream reaches the handler and any past
        # max_streams gets RESOURCE_EXHAUSTED there.
        ("grpc.server.max_pending_requests", 2 * max_streams),
        ("grpc.server.max_pending_requests_hard_limit", 4 * max_streams),
    ]


class Learner:
    def __init__(self, config: LearnerConfig, spec: EnvSpec, agent: Agent, checkpointer: Any = None) -> None:
        self.config = config
        self.spec = spec
        self.agent = agent
        self.stats = Stats(window=config.return_window)
        self.history = History()
        """Metric snapshots, one per ``metrics_every_s``; the console and /metrics read them."""
        self._checkpointer = checkpointer
        self._stop = asyncio.Event()
        self._unrolls: asyncio.Queue[dict[str, np.ndarray]] = asyncio.Queue(config.training.queue_capacity)
        self.batcher = Batcher(config.batcher)
        columns = {
            "observation": (agent.spec.observation_shape, spec.dtype),
            "reward": ((), np.float32),
            "done": ((), bool),
            "phantom": ((), bool),
            "version": ((), np.int64),
            **agent.output_columns(),
            **agent.state_columns(),
        }
        # R2D2: each unroll starts with burn_in steps that overlap the previous unroll.
        self.store = UnrollStore(
            agent.burn_in + config.training.unroll_length,
            columns,
            overlap=agent.burn_in + 1,
            first_step_only=agent.state_columns().keys(),
        )
        per_unroll = agent.state_columns().keys()
        self.source: Source = (
            self._replay_feed(config, agent)
            if agent.uses_replay
            else UnrollQueue(self._unrolls, config.training.batch_size, per_unroll)
        )
        self.trainer = Trainer(config.training, agent, self.source, self._on_train_step, lambda: self.frames)
        stack = config.learner_frame_stack
        if stack > 1 and agent.spec.observation_shape != (stack, *spec.observation_shape[1:]):
            raise ValueError(f"learner_frame_stack={stack}: the agent sees {agent.spec.observation_shape}, actors send {spec.observation_shape}")
        self.inference = InferenceLoop(
            self.batcher,
            agent,
            EnvTable(),
            self.store,
            self._unrolls,
            lambda: self.trainer.version,
            self._on_batch,
            agent.spec.num_actions,
            FrameStacker(stack) if stack > 1 else None,
            CoreStates(agent.state_columns()),
        )
        self.slots = SlotTable(config.max_envs, config.slot_grace_s)
        self.service = LearnerService(
            spec,
            self.slots,
            self.inference,
            StreamLimits(
                config.max_streams, config.max_envs_per_stream, config.max_envs_per_actor, config.max_envs, config.hello_timeout_s
            ),
            self.batcher.set_connected_rows,
            self.stats.record_latency,
            RowBounds(config.max_abs_reward, config.max_abs_observation),
        )
        self.batcher.set_connected_rows(0)
        self._health = health.aio.HealthServicer()
        self._server: grpc.aio.Server | None = None
        self.port: int | None = None
        self._frames_offset = 0
        self.console: Any = None
        """The web console server, once started (``config.console``)."""
        self.console_url: str | None = None
        self._last_checkpoint = time.monotonic()
        self.stop_reason: str | None = None
        """Why the learner stopped: "requested", "frames", "return" or "time"."""
        self.stop_time: float | None = None
        """Wall-clock time (time.time()) of the stop request."""
        self.stop_frames: int | None = None
        """Frames at the stop request (before the drain)."""
        self.stop_mean_return = float("nan")
        """Mean return at the stop request."""
        self.auth_refused = 0
        """Calls refused for a missing or wrong token."""

    def _replay_feed(self, config: LearnerConfig, agent: Agent) -> ReplayFeed:
        r2d2 = config.r2d2
        replay = Replay(r2d2.replay_capacity, r2d2.priority_exponent, r2d2.importance_exponent, seed=config.seed)
        return ReplayFeed(
            replay,
            self._unrolls,
            config.training.batch_size,
            r2d2.min_replay_size,
            r2d2.replay_ratio,
            agent.state_columns().keys(),
        )

    # ---- the control API -------------------------------------------------------------------
    def configure_batcher(self, max_batch_size: int | None = None, deadline_ms: float | None = None) -> BatcherConfig:
        """Stages new batching settings; they apply from the next batch."""
        return self.batcher.configure(max_batch_size=max_batch_size, deadline_ms=deadline_ms)

    def pause(self) -> None:
        self.trainer.pause()
        log.info("training_paused")

    def resume(self) -> None:
        self.trainer.resume()
        log.info("training_resumed")

    async def set_learning_rate(self, value: float) -> None:
        """Applies between train steps."""
        if not value > 0:
            raise ValueError(f"learning_rate must be positive, got {value}")
        await self.trainer.run_between_steps(lambda: self.agent.set_learning_rate(value))

    async def checkpoint_now(self) -> str | None:
        """Saves a checkpoint between train steps; returns its path. Raises CheckpointRefused when the
        weights are non-finite."""
        if self._checkpointer is None:
            return None
        # Counters are read in the train thread, after the step in progress, so they match the weights.
        path = await self.trainer.run_between_steps(lambda: self._checkpointer.save(self._progress()))
        self._last_checkpoint = time.monotonic()
        return path

    def request_stop(self, reason: str = "requested") -> None:
        """Starts the ordered shutdown: stop accepting, drain, checkpoint, return from ``run``."""
        if not self._stop.is_set():
            self.stop_reason = reason
            self.stop_time = time.time()
            self.stop_frames = self.frames
            self.stop_mean_return = self.stats.mean_return()
            self._stop.set()

    def disconnect(self, stream_id: int) -> None:
        """Ends one actor stream (KeyError if there is none)."""
        self.service.disconnect(stream_id)

    def metrics(self) -> dict[str, float]:
        """The latest metrics snapshot (empty before the first)."""
        return self.history.latest

    def series(self, since: float = 0.0) -> list[dict[str, float]]:
        """Snapshots taken after ``since`` (time.time())."""
        return self.history.since(since)

    def actors(self) -> list[dict[str, Any]]:
        return self.service.describe_streams()

    @property
    def metrics_every_s(self) -> float:
        return self.config.metrics_every_s

    def settings(self) -> dict[str, Any]:
        """Settings in effect, and batcher settings staged for the next batch."""
        return {
            "max_batch_size": self.batcher.active.max_batch_size,
            "deadline_ms": self.batcher.active.deadline_ms,
            "learning_rate": self.agent.learning_rate,
            "paused": self.trainer.paused,
            "staged": {"max_batch_size": self.batcher.config.max_batch_size, "deadline_ms": self.batcher.config.deadline_ms},
        }

    async def stopping(self) -> None:
        """Returns once a stop has been requested."""
        await self._stop.wait()

    @property
    def queue_depth(self) -> int:
        """Completed unrolls waiting for the prefetch task."""
        return self._unrolls.qsize()

    @property
    def frames(self) -> int:
        return self._frames_offset + self.stats.frames

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> int:
        """Restores the latest checkpoint and starts serving; returns the bound port."""
        if self._checkpointer is not None:
            progress = await self.trainer.run_between_steps(self._checkpointer.restore)
            if progress is not None:
                self.trainer.version = progress.train_steps
                self.stats.train_steps = progress.train_steps
                self._frames_offset = progress.frames
        options = server_options(self.config.max_streams, self.config.max_message_bytes)
        interceptors = [TokenInterceptor(self.config.token, self._count_refusal)] if self.config.token else []
        self._server = grpc.aio.server(options=options, interceptors=interceptors)
        pb_grpc.add_LearnerServicer_to_server(self.service, self._server)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._server)
        address = f"{self.config.host}:{self.config.port}"
        if self.config.tls_cert is not None and self.config.tls_key is not None:
            credentials = grpc.ssl_server_credentials([(self.config.tls_key.read_bytes(), self.config.tls_cert.read_bytes())])
            self.port = self._server.add_secure_port(address, credentials)
        else:
            self.port = self._server.add_insecure_port(address)
        if self.port == 0:
            raise OSError(f"cannot bind {self.config.host}:{self.config.port}")
        await self._server.start()
        await self._health.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        log.info("learner_listening", host=self.config.host, port=self.port, spec=self.spec.describe())
        if self.config.console:
            from aioseed.console import ConsoleServer

            c = self.config
            self.console = ConsoleServer(self, c.console_host, c.console_port, c.console_token, c.console_allowed_hosts)
            self.console_url = await self.console.start()
        return self.port

    async def run(self) -> None:
        """Serves until ``request_stop``; then stops accepting, drains, checkpoints and returns."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(self.inference.run(), name="inference"),
                    group.create_task(self.trainer.prefetch(), name="prefetch"),
                    group.create_task(self.trainer.train(), name="train"),
                    group.create_task(self._report(), name="report"),
                ]
                tasks.append(group.create_task(self.source.run(), name="source"))
                if self.config.stop_after_seconds is not None:
                    tasks.append(group.create_task(self._stop_after(self.config.stop_after_seconds), name="timer"))
                await self._stop.wait()
                log.info("learner_stopping", frames=self.frames, train_steps=self.trainer.version)
                await self._health.enter_graceful_shutdown()
                await self._server.stop(self.config.shutdown_grace_s)
                for task in tasks:
                    task.cancel()
        finally:
            await self._server.stop(None)
            if self._checkpointer is not None:
                with contextlib.suppress(CheckpointRefused):  # logged; the last good checkpoint stays
                    await self.checkpoint_now()
            self.trainer.executor.shutdown(wait=True)
            if self.console is not None:
                await self.console.stop()
            log.info("learner_stopped", frames=self.frames, train_steps=self.trainer.version)

    def _progress(self) -> Progress:
        return Progress(train_steps=self.trainer.version, frames=self.frames)

    # ---- callbacks and the report task -----------------------------------------------------
    def _on_batch(self, batch: Batch, result: StepResult) -> None:
        boundaries = result.boundaries
        self.stats.record_batch(
            batch.size, batch.fill_seconds, result.seconds, boundaries.env_steps * self.spec.frames_per_step
        )
        if len(boundaries.episode_returns):
            self.stats.record_episodes(
                boundaries.episode_returns, boundaries.episode_lengths, result.evaluation_episodes
            )
            self._check_stop_conditions()
        elif self.config.stop_after_frames is not None:
            self._check_stop_conditions()

    def _count_refusal(self) -> None:
        self.auth_refused += 1

    def _on_train_step(self, metrics: dict[str, float], policy_lag: float) -> None:
        self.stats.record_train(metrics, policy_lag)

    def _check_stop_conditions(self) -> None:
        c = self.config
        if self._stop.is_set():
            return
        if c.stop_after_frames is not None and self.frames >= c.stop_after_frames:
            log.info("stop_condition", reason="frames", frames=self.frames)
            self.request_stop("frames")
        elif (
            c.stop_at_return is not None
            and len(self.stats.returns) >= c.return_window
            and self.stats.mean_return() >= c.stop_at_return
        ):
            log.info(
                "stop_condition",
                reason="return",
                frames=self.frames,
                mean_return=round(self.stats.mean_return(), 2),
                seconds=round(time.monotonic() - self.stats.started, 2),
            )
            self.request_stop("return")

    async def _stop_after(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        log.info("stop_condition", reason="time", frames=self.frames)
        self.request_stop("time")

    def _gauges(self) -> dict[str, float]:
        """Instantaneous values added to every metrics snapshot."""
        return {
            "charts/frames": float(self.frames),
            "learner/train_steps": float(self.trainer.version),
            "learner/paused": float(self.trainer.paused),
            "train/skipped_nonfinite": float(self.trainer.skipped_nonfinite),
            "learner/learning_rate": self.agent.current_learning_rate,
            "queue/depth": float(self.queue_depth),
            "queue/capacity": float(self.config.training.queue_capacity),
            "actors/streams": float(len(self.service.streams)),
            "actors/handshaking": float(self.service.handshaking),
            "actors/envs": float(self.slots.connected),
            "actors/reserved_slots": float(self.slots.reserved),
            "actors/auth_refused": float(self.auth_refused),
            **self.source.metrics(),
        }

    async def _report(self) -> None:
        """Samples metrics every ``metrics_every_s``; logs, writes summaries and checkpoints on their intervals."""
        writer = self._summary_writer()
        logged_at, logged_frames = time.monotonic(), self.frames
        while True:
            await asyncio.sleep(self.config.metrics_every_s)
            snapshot = self.stats.take(self._gauges())
            self.history.append(snapshot)
            now = time.monotonic()
            for info in self.service.streams.values():
                info.update_rate(now)
            if now - logged_at < self.config.log_every_s:
                continue
            log.info(
                "progress",
                frames=self.frames,
                fps=round((self.frames - logged_frames) / (now - logged_at)),
                mean_return=round(snapshot["charts/return"], 1),
                episodes=self.stats.episodes,
                train_steps=self.trainer.version,
                loss=round(snapshot.get("losses/total", float("nan")), 4),
                batch=round(snapshot["batcher/batch_size"], 1),
                streams=len(self.service.streams),
                lag=round(self.stats.policy_lag, 2),
                **({"eval_return": round(snapshot["charts/eval_return"], 1)} if self.stats.eval_returns else {}),
            )
            logged_at, logged_frames = now, self.frames
            if writer is not None:
                await self.trainer.run_between_steps(lambda: writer(snapshot, self.frames))
            every = self.config.checkpoint_every_s
            if self._checkpointer is not None and every > 0 and time.monotonic() - self._last_checkpoint >= every:
                try:
                    await self.checkpoint_now()
                except CheckpointRefused:  # logged; tried again after the next interval
                    self._last_checkpoint = time.monotonic()

    def _summary_writer(self) -> Any:
        if self.config.logdir is None or not self.config.tensorboard:
            return None
        from aioseed.server.summaries import SummaryWriter

        return SummaryWriter(pathlib.Path(self.config.logdir))

