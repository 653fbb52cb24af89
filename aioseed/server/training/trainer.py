"""Prefetch and train tasks: unroll queue -> time-major batches -> train step in a thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import time
from collections.abc import Callable

import structlog

from aioseed.algos.agent import SKIPPED, Agent
from aioseed.control import CommandRefused
from aioseed.server.trajectories.pacing import ActingMode, Pacing
from aioseed.server.trajectories.source import Source
from aioseed.types import TrainBatch

log = structlog.get_logger()


@dataclasses.dataclass(frozen=True)
class TrainingConfig:
    """Trajectories and the train step."""

    unroll_length: int = 20
    """T: steps per unroll (each unroll holds T + 1 observations)."""
    batch_size: int = 32
    """Unrolls per train step."""
    queue_capacity: int = 64
    """Bound of the unroll queue; when full, inference waits and the actors stall (back-pressure)."""
    prefetch_batches: int = 1
    """Time-major batches prepared ahead of the train step."""
    acting: ActingMode = "async"
    """How far acting may run ahead of training (V-trace with SEED actors): async (SEED: acting never waits
    for an update; the lag is what the queues hold), bounded (at most lag_bound batches ahead: acting overlaps
    training, for GPU learners), or synchronous (PPO: acting stops from the moment a batch is complete
    until its update has applied, so the behaviour policy is the proximal one; each env completes one
    unroll a train batch and then waits for its update, so batch_size should be the number of envs, with each
    actor sending all its envs in one message: with fewer envs than batch_size no batch completes); with SAC's
    replay, replay (acting waits whenever it is a train batch ahead of the replay ratio, so the ratio of
    updates to env steps holds from both sides)."""
    lag_bound: int = 1
    """Bounded acting: train batches acting may complete beyond the one training, so the policy lag stays within
    lag_bound + 1 batches of updates."""

    def __post_init__(self) -> None:
        for name in ("unroll_length", "batch_size", "queue_capacity", "prefetch_batches", "lag_bound"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclasses.dataclass(frozen=True)
class Progress:
    """Counters saved with checkpoints."""

    train_steps: int
    frames: int


class Trainer:
    """Verbs: ``prefetch`` and ``train`` (tasks), ``pause``/``resume``, ``run_between_steps``."""

    def __init__(
        self,
        config: TrainingConfig,
        agent: Agent,
        source: Source,
        on_step: Callable[[dict[str, float], float], None],
        frames: Callable[[], int] = lambda: 0,
        on_version: Callable[[int], None] | None = None,
        pacing: Pacing | None = None,
        running: asyncio.Event | None = None,
    ) -> None:
        """Batches come from ``source`` (V-trace's unroll queue, R2D2's replay), which hears back after
        each train step. ``frames`` reads the learner's frame count, which moves the learning-rate schedule.
        ``on_version`` hears each new version in the train thread, right after its update (IMPALA mode
        publishes the parameters there). ``pacing`` hears of each train step once its updates have applied.
        ``running`` (set) is cleared by ``pause``; the source may share it (a replay holds its inserts)."""
        self._config = config
        self._agent = agent
        self._source = source
        self._batches: asyncio.Queue[TrainBatch] = asyncio.Queue(config.prefetch_batches)
        self._on_step = on_step
        self._frames = frames
        self._on_version = on_version
        self._pacing = pacing
        self._running = running if running is not None else asyncio.Event()
        self._running.set()
        self.version = 0
        """Parameter version: the number of updates applied (several per batch with sample reuse)."""
        self.skipped_nonfinite = 0
        """Updates not applied because their loss or gradients were non-finite (since the learner started)."""
        self.stepping = False
        """A train step is running (while paused, the one in progress finishes; no new one starts)."""
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="train")

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    def pause(self) -> None:
        """Stops after the current train step. The unroll queue fills (a replay stops inserting) and
        back-pressure stalls the actors."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    async def run_between_steps(self, fn: Callable[[], object]) -> object:
        """Runs ``fn`` in the train thread, after the step in progress (e.g. a checkpoint); CommandRefused once
        the learner has shut the train thread down (a console command in the last moments of a shutdown)."""
        try:
            job = asyncio.get_running_loop().run_in_executor(self.executor, fn)
        except RuntimeError:  # the executor refuses new work
            raise CommandRefused("the learner is stopping") from None
        return await job

    async def prefetch(self) -> None:
        while True:
            await self._batches.put(await self._source.next_batch())

    async def train(self) -> None:
        loop = asyncio.get_running_loop()
        first = True
        while True:
            batch = await self._batches.get()
            while not self._running.is_set():  # re-checked: a pause may land between wake-up and resumption
                await self._running.wait()
            if first:  # said, so that acting's pause while it traces (and may compile) reads as what it is
                log.info("first_train_step", version=self.version, hint="the update is traced (and compiled with XLA) first")
                started = time.perf_counter()
            self.stepping = True
            try:
                metrics, lag = await loop.run_in_executor(self.executor, self._step, batch)
            finally:
                self.stepping = False
            if first:
                log.info("first_train_step_done", seconds=round(time.perf_counter() - started, 1), version=self.version)
                first = False
            if self._pacing is not None:
                self._pacing.trained(self.version)
            self._on_step(metrics, lag)

    def _step(self, batch: TrainBatch) -> tuple[dict[str, float], float]:
        """In the train thread: the updates and the version count together (``_applied`` after each),
        so that a checkpoint (also run in this thread) never sees one without the other, even if the
        train task is cancelled. Returns the metrics and the policy lag: the mean over the step's updates
        and steps of the updates between the version that acted and the one being updated."""
        start = self.version
        self._agent.set_progress(self._frames())
        metrics = self._agent.train_step(batch, self._applied)
        # Here, not on the event loop: a replay's lock may be held by a save for seconds; and so a
        # checkpoint (also run in this thread) holds every step's priorities up to its own.
        self._source.update(batch, metrics)
        skipped = int(metrics.pop(SKIPPED, 0))
        if skipped:
            self.skipped_nonfinite += skipped
            log.warning("update_skipped_nonfinite", skipped=skipped, total=self.skipped_nonfinite, version=self.version)
        if self._on_version is not None:
            self._on_version(self.version)
        acted = batch["version"][:-1]
        last = start + max(self.version - start - 1, 0)  # the version the step's last update started from
        metrics["learner/policy_lag_max"] = float(last - acted.min())
        return metrics, float((start + last) / 2 - acted.mean())

    def _applied(self) -> None:
        """One more update is in the weights (the agent calls this in the train thread)."""
        self.version += 1
