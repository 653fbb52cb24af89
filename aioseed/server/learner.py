"""The learner: the lifecycle and the control of stages that ``aioseed.compose.learner.build`` wires together.

``Learner`` implements ``aioseed.control.Control``: ``configure_batcher``,
``pause``/``resume``, ``set_learning_rate``, ``checkpoint_now``, ``disconnect`` and
the snapshots the console reads; ``request_stop`` starts the ordered shutdown.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import pathlib
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np
import structlog

from aioseed.algos.agent import Agent
from aioseed.control import CommandRefused
from aioseed.server.batching.auto import AutoBatching
from aioseed.server.batching.batcher import BatcherConfig
from aioseed.server.config import LearnerSettings
from aioseed.server.reporting.reporter import Reporter, Snapshot
from aioseed.server.reporting.stats import History
from aioseed.server.stages import Stages
from aioseed.server.training.checkpoint import CheckpointFailed, CheckpointRefused
from aioseed.server.training.live_settings import LiveSettings
from aioseed.server.training.trainer import Progress
from aioseed.server.trajectories.replay_feed import ReplayFeed
from aioseed.server.transport.streams import LocalStream
from aioseed.spec import EnvSpec

log = structlog.get_logger()


class Console(Protocol):
    """A front end the learner starts after its gRPC port and stops last (the web console)."""

    async def start(self) -> str:
        """Serves; returns the URL."""
        ...

    async def stop(self) -> None: ...


class Learner:
    def __init__(
        self,
        config: LearnerSettings,
        spec: EnvSpec,
        agent: Agent,
        stages: Stages,
        console: Callable[[Learner], Console] | None = None,
        run_info: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        """``spec``: what actors send; ``console``: makes the front end that steers this learner; ``run_info``:
        the run panel's fixed part (``aioseed.compose.run_info.describe``), to which the start time and the
        checkpoints kept are added."""
        self.config = config
        self._run_info = run_info
        self.spec = spec
        self.agent = agent
        self._stages = stages
        self._batcher = stages.batcher
        self._trainer = stages.trainer
        self._service = stages.service
        self._stats = stages.stats
        self.stopping = stages.stopping
        """Whether, why and when the learner stopped."""
        self._history = History()
        """Metric snapshots, one per ``metrics_every_s``; the console and /metrics read them."""
        write = stages.write_summaries

        def write_between_steps(snapshot: Snapshot) -> Any:  # summaries are written between train steps
            assert write is not None
            return self._trainer.run_between_steps(lambda: write(snapshot, int(snapshot["charts/frames"])))

        self._reporter = Reporter(
            sample=self._snapshot, frames=lambda: self.frames, history=self._history, every_s=config.metrics_every_s,
            log_every_s=config.log_every_s, write=None if write is None else write_between_steps, observe=self._tune,
        )
        self.stopping.on_request = self._reporter.mark_stop
        self.console = console(self) if console is not None else None
        self.console_url: str | None = None
        self.port: int | None = None
        self.final_checkpoint_error: str | None = None
        """Why the checkpoint at shutdown was not written (None: it was, or there is no logdir)."""
        self._last_checkpoint = time.monotonic()
        self._started = time.time()
        self._batching = AutoBatching(config.batching, self._batcher, self.latency_counts, config.metrics_every_s)

    # ---- reading ---------------------------------------------------------------------------
    @property
    def frames(self) -> int:
        """Env frames trained on so far, checkpointed runs included."""
        return self._stats.frames

    @property
    def train_steps(self) -> int:
        """Parameter version: updates applied (several per batch with sample reuse)."""
        return self._trainer.version

    def set_version(self, train_steps: int) -> None:
        """The parameter version the metrics report (aioseed serve: the served checkpoint's train steps); the
        train-step rate counts from it."""
        self._trainer.version = train_steps
        self._stats.restore(self._stats.frames, train_steps)

    @property
    def live(self) -> LiveSettings | None:
        """The training settings that may change while it trains (None in aioseed serve)."""
        return self._stages.live

    @property
    def paused(self) -> bool:
        return self._trainer.paused

    @property
    def step_in_progress(self) -> bool:
        """A train step is running (after ``pause``, the one in progress still finishes)."""
        return self._trainer.stepping

    @property
    def skipped_nonfinite(self) -> int:
        """Updates not applied because their loss or gradients were non-finite."""
        return self._trainer.skipped_nonfinite

    @property
    def connected_envs(self) -> int:
        """Env slots held by connected streams."""
        return self._service.connected_envs

    @property
    def handshaking(self) -> int:
        """Streams still owing their hello."""
        return self._service.handshaking

    @property
    def auth_refused(self) -> int:
        """Calls refused for a missing or wrong token."""
        return self._stages.endpoint.auth_refused

    @property
    def queue_depth(self) -> int:
        """Completed unrolls waiting between inference and the train batches."""
        return self._stages.inference.queue_depth

    @property
    def mean_return(self) -> float:
        return self._stats.mean_return()

    @property
    def metrics_every_s(self) -> float:
        return self.config.metrics_every_s

    def metrics(self) -> dict[str, float]:
        """The latest metrics snapshot (empty before the first)."""
        return self._history.latest

    def series(self, since: float = 0.0) -> list[dict[str, float]]:
        """Snapshots taken after ``since`` (time.time())."""
        return self._history.since(since)

    def latency_counts(self) -> np.ndarray:
        """Action latencies so far, counted in ``latency.EDGES_MS`` buckets (a span's p99: the quantile of
        the difference of two readings)."""
        return self._stats.latency_counts.read()

    def open_local(self, spec: EnvSpec, run_ids: Any, actor: str, evaluation: bool = False, previous: Any = ()) -> LocalStream:
        """An in-process stream for Sebulba's actor threads (``LearnerService.open_local``)."""
        return self._service.open_local(spec, run_ids, actor, evaluation, previous)

    def actors(self) -> list[dict[str, Any]]:
        return self._service.describe_streams()

    def clip_directory(self) -> pathlib.Path | None:
        return None if self.config.logdir is None else self.config.logdir / "videos"

    async def run_info(self) -> dict[str, Any]:
        started = datetime.datetime.fromtimestamp(self._started, datetime.UTC).isoformat(timespec="seconds")
        info = {**self._run_info(), "started": started}
        checkpointer = self._stages.checkpointer
        info["checkpoints"] = [] if checkpointer is None else await asyncio.to_thread(checkpointer.listing)
        return info

    def settings(self) -> dict[str, Any]:
        """Settings in effect, batcher settings staged for the next batch, the auto-tuner's state, and the training
        settings that may change live (``training``: their values; ``live``: what each takes)."""
        live = self._stages.live
        return {
            "max_batch_size": self._batcher.active.max_batch_size,
            "deadline_ms": self._batcher.active.deadline_ms,
            "learning_rate": self.agent.learning_rate,
            "paused": self._trainer.paused,
            "staged": {"max_batch_size": self._batcher.config.max_batch_size, "deadline_ms": self._batcher.config.deadline_ms},
            "auto": self._batching.state(),
            **({} if live is None else {"training": live.values(), "live": live.catalog(), "changes": live.history}),
        }

    @property
    def batching_auto(self) -> bool:
        """The auto-tuner sets the batcher."""
        return self._batching.enabled

    # ---- control ---------------------------------------------------------------------------
    def configure_batcher(self, max_batch_size: int | None = None, deadline_ms: float | None = None) -> BatcherConfig:
        """Stages new batching settings (a manual change: the auto-tuner stops); they apply from the next batch."""
        staged = self._batcher.configure(max_batch_size=max_batch_size, deadline_ms=deadline_ms)
        if self._batching.enabled:
            self.set_batching_auto(False, "a manual change")
        return staged

    def set_batching_auto(self, enabled: bool, why: str = "requested") -> None:
        """Turns the auto-tuner on (it starts from the settings staged now) or off (they stay)."""
        self._batching.set(enabled, why)

    def pause(self) -> None:
        self._trainer.pause()
        log.info("training_paused")

    def resume(self) -> None:
        self._trainer.resume()
        log.info("training_resumed")

    async def change_settings(self, changes: dict[str, Any], who: str) -> dict[str, Any]:
        """Live training settings (``aioseed.server.training.live_settings``): applied between train steps and recorded."""
        if self._stages.live is None:
            raise CommandRefused("aioseed serve trains nothing: it has no training settings to change")
        if self.stopping.requested:
            raise CommandRefused("the learner is stopping")
        return await self._stages.live.change(changes, who)

    async def set_learning_rate(self, value: float, who: str = "console") -> None:
        """Applies between train steps, recorded with the live settings' changes (CommandFailed: their record
        cannot be written, and the rate stays)."""
        if not value > 0:
            raise ValueError(f"learning_rate must be positive, got {value}")
        if self._stages.live is None:
            raise CommandRefused("aioseed serve trains nothing: it has no learning rate to change")
        if self.stopping.requested:  # its final checkpoint may be written: the change would be lost
            raise CommandRefused("the learner is stopping")
        await self._stages.live.change_learning_rate(value, who)

    async def checkpoint_now(self, final: bool = False) -> str | None:
        """Saves a checkpoint between train steps; returns its path (None without a logdir). Raises
        CheckpointRefused when the weights are non-finite, CheckpointFailed when writing fails. ``final``: the
        one written at shutdown (a tracker may send only that one)."""
        checkpointer = self._stages.checkpointer
        if checkpointer is None:
            return None
        # Counters are read in the train thread, after the step in progress, so they match the weights.
        def save() -> tuple[str, Progress]:
            progress = self._progress()
            return checkpointer.save(progress), progress

        path, progress = await self._trainer.run_between_steps(save)
        self._last_checkpoint = time.monotonic()
        tracker = self._stages.tracker
        if tracker is not None:
            tracker.checkpoint(path, progress.frames, final)  # queued for the tracking thread
        return path

    async def run_between_steps(self, fn: Callable[[], object]) -> object:
        """Runs ``fn`` in the train thread, after the step in progress (so it sees consistent weights)."""
        return await self._trainer.run_between_steps(fn)

    def disconnect(self, stream_id: int) -> None:
        """Ends one actor stream (KeyError if there is none, CommandRefused if it is in-process)."""
        info = self._service.streams.get(stream_id)
        if info is not None and info.peer == "in-process":  # Sebulba's env threads: a cancelled group would not come back
            raise CommandRefused(f"stream {stream_id} is the learner's in-process actor {info.actor}, which cannot reconnect")
        self._service.disconnect(stream_id)

    def request_stop(self, reason: str = "requested") -> None:
        """Starts the ordered shutdown: stop accepting, drain, checkpoint, return from ``run``."""
        self.stopping.request(reason)

    async def stopped(self) -> None:
        """Returns once a stop has been requested."""
        await self.stopping.wait()

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> int:
        """Restores the latest checkpoint and starts serving; returns the bound port."""
        checkpointer = self._stages.checkpointer
        if checkpointer is not None:
            progress = await self._trainer.run_between_steps(checkpointer.restore)
            if progress is not None:
                self._trainer.version = progress.train_steps
                self._stats.restore(progress.frames, progress.train_steps)
                # The restored rates in effect now (not from the first train step on): the console reads them.
                await self._trainer.run_between_steps(lambda: self.agent.set_progress(progress.frames))
                if self._stages.live is not None:  # the settings changed live up to the checkpoint
                    await self._stages.live.resume(progress.train_steps, progress.frames)
            elif self._stages.live is not None:
                await self._stages.live.start_afresh()
            pacing, source = self._stages.pacing, self._stages.source
            if isinstance(source, ReplayFeed):
                if source.replay.inserted:  # a checkpointed replay was restored: its samples count as earned
                    source.resume()
                if pacing is not None:  # a checkpointed replay keeps acting's count
                    pacing.resume(source.replay.inserted, source.batches_sampled)
        params = self._stages.params
        if params is not None:  # IMPALA actors pull the restored (or initial) weights first
            await self._trainer.run_between_steps(lambda: params.publish(self._trainer.version))
        self.port = await self._stages.endpoint.start()
        log.info("learner_listening", host=self.config.server.host, port=self.port, spec=self.spec.describe())
        if self.console is not None:
            try:
                self.console_url = await self.console.start()
            except BaseException:  # a taken console port: the gRPC port is not left serving
                await self._stages.endpoint.stop()
                raise
        return self.port

    async def run(self) -> None:
        """Serves until ``request_stop``; then stops accepting, drains, checkpoints and returns."""
        if self.port is None:
            await self.start()
        stages = self._stages
        completed = False
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(stages.inference.run(), name="inference"),
                    group.create_task(stages.source.run(), name="source"),
                    group.create_task(self._trainer.prefetch(), name="prefetch"),
                    group.create_task(self._trainer.train(), name="train"),
                    group.create_task(self._reporter.run(), name="report"),
                    group.create_task(self._checkpoint_periodically(), name="checkpoints"),
                    group.create_task(self.stopping.timer(), name="timer"),
                    group.create_task(stages.service.expire_idle(), name="idle-streams"),
                ]
                if stages.live is not None and stages.live.scheduled:
                    tasks.append(group.create_task(stages.live.follow(lambda: self.frames), name="settings-schedule"))
                await self.stopping.wait()
                log.info("learner_stopping", frames=self.frames, train_steps=self.train_steps)
                await stages.endpoint.drain(self.config.server.shutdown_grace_s)
                for task in tasks:
                    task.cancel()
            await self._reporter.final()
            completed = True
        finally:
            await stages.endpoint.stop()
            if stages.checkpointer is not None:
                try:
                    await self.checkpoint_now(final=True)
                except CheckpointRefused:  # diverged weights, logged: the last good checkpoint stays (a sweep scores the run)
                    pass
                except CheckpointFailed as exc:  # logged; the process exits 1 (a supervisor must not take it for a stop)
                    self.final_checkpoint_error = str(exc)
            if stages.tracker is not None:
                await asyncio.to_thread(stages.tracker.close, completed)
            await asyncio.to_thread(self._trainer.executor.shutdown, wait=True)  # the step in progress, off the loop
            if self.console is not None:
                await self.console.stop()
            log.info("learner_stopped", frames=self.frames, train_steps=self.train_steps)

    def _progress(self) -> Progress:
        return Progress(train_steps=self._trainer.version, frames=self.frames)

    async def _checkpoint_periodically(self) -> None:
        every = self.config.checkpoint_every_s
        if self._stages.checkpointer is None or every <= 0:
            return
        while True:
            await asyncio.sleep(max(0.0, self._last_checkpoint + every - time.monotonic()))
            if time.monotonic() - self._last_checkpoint < every:
                continue  # a checkpoint was taken meanwhile (console, API)
            try:
                await self.checkpoint_now()
            except (CheckpointRefused, CheckpointFailed):  # logged; tried again after the next interval
                self._last_checkpoint = time.monotonic()

    def _tune(self, snapshot: Snapshot) -> None:
        self._batching.observe(snapshot, self.connected_envs, self._service.largest_stream, paused=self._trainer.paused)

    def _snapshot(self) -> Snapshot:
        """The stats since the previous snapshot, and gauges of every stage."""
        return self._stats.take(
            {
                "learner/train_steps": float(self._trainer.version),
                "learner/paused": float(self._trainer.paused),
                "train/skipped_nonfinite": float(self._trainer.skipped_nonfinite),
                "learner/learning_rate": self.agent.current_learning_rate,
                "batching/auto": float(self._batching.enabled),
                "batching/target_ms": float(self.config.batching.latency_target_ms or math.nan),
                "batching/max_batch_size": float(self._batcher.active.max_batch_size),
                "batching/deadline_ms": self._batcher.active.deadline_ms,
                "actors/auth_refused": float(self.auth_refused),
                **self._stages.inference.metrics(),
                **self._service.metrics(),
                **self._stages.source.metrics(),
                **({} if self._stages.live is None else self._stages.live.metrics()),
            }
        )

