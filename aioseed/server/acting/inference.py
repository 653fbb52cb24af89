"""The inference loop: closed batches -> policy in a worker thread -> unrolls and actions.

Each batch runs ``Acting.step`` in a worker thread: one by default, or one per inference device
(``lanes``), so that several batches run the policy at once. The event loop only moves batches,
futures and completed unrolls. ``Pacing`` says how far acting may run ahead of training; when it
holds acting back (bounded and synchronous modes), batches are judged one at a time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Callable

import numpy as np
import structlog

from aioseed.server.acting.step import Acting, StepResult
from aioseed.server.batching.batcher import Batch, Batcher, InferenceError
from aioseed.server.trajectories.pacing import Pacing
from aioseed.types import Rows, Unroll

log = structlog.get_logger()


Started = tuple[Batch, "asyncio.Future[StepResult]", "asyncio.Future[None]"]
"""A batch, its policy step in a worker thread, and a future set once its unrolls are counted."""


class InferenceLoop:
    """Verbs: ``run`` (a task), ``submit`` rows, ``detach`` a stream's slots."""

    def __init__(
        self,
        batcher: Batcher,
        acting: Acting,
        unrolls: asyncio.Queue[Unroll],
        on_batch: Callable[[Batch, StepResult], None],
        lanes: int = 1,
        pacing: Pacing | None = None,
    ) -> None:
        """``lanes``: batches whose policy may run at once (one per inference device); ``pacing``: how far
        acting may run ahead of training (None: async, held back by the bounded queue only)."""
        self._batcher = batcher
        self._acting = acting
        self._unrolls = unrolls
        self._on_batch = on_batch
        self._lanes = lanes
        self._pacing = pacing or Pacing("async", 1)
        self._executor = concurrent.futures.ThreadPoolExecutor(lanes, thread_name_prefix="inference")

    @property
    def queue_depth(self) -> int:
        """Completed unrolls in the bounded queue, waiting for the source."""
        return self._unrolls.qsize()

    def metrics(self) -> dict[str, float]:
        """Gauges of the unroll queue between inference and the train batches, and of acting's opponent (self-play)."""
        return {"queue/depth": float(self.queue_depth), "queue/capacity": float(self._unrolls.maxsize), **self._acting.metrics()}

    def submit(self, rows: Rows) -> asyncio.Future[dict[str, np.ndarray]]:
        return self._batcher.submit(rows)

    async def run(self) -> None:
        """Two stages: ``_start`` hands each batch to the worker thread as soon as it closes, so
        the next batch fills and starts while one runs; ``_finish`` answers batches in order,
        then queues their completed unrolls, which waits while training lags (back-pressure)."""
        started: asyncio.Queue[Started] = asyncio.Queue(self._lanes)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._start(started), name="inference-start")
                group.create_task(self._finish(started, group), name="inference-finish")
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _start(self, started: asyncio.Queue[Started]) -> None:
        loop = asyncio.get_running_loop()
        pacing = self._pacing
        while True:
            await pacing.ready()
            batch = await self._batcher.get()
            judged = loop.create_future()
            step = functools.partial(_step_on, self._acting, batch)  # the rows are concatenated in the thread too
            await started.put((batch, loop.run_in_executor(self._executor, step), judged))
            if pacing.paced:  # the next batch starts only once this one's unrolls are counted
                await judged

    async def _finish(self, started: asyncio.Queue[Started], group: asyncio.TaskGroup) -> None:
        """``group`` also owns the answers deferred until an update (on-policy paced modes)."""
        while True:
            batch, job, judged = await started.get()
            try:
                result = await job
            except Exception as exc:  # the learner carries on; the streams get INTERNAL
                _fail(batch, exc)
                judged.set_result(None)
                continue
            count = 0 if result.unrolls is None else len(result.unrolls["slot"])
            hold = self._pacing.completed(count)
            judged.set_result(None)
            if hold or self._pacing.stale(result.version):
                # Acting stops here until an update (or one landed while the policy ran). This batch is
                # answered only after it, by the updated policy, so the unrolls that start here start on
                # the policy that trains next.
                await self._queue(result)
                if hold:
                    self._warn_overshoot()
                    await self._pacing.ready()
                if not self._pacing.redoes:  # off-policy: the answer stands, it only had to wait
                    self._answer(batch, result)
                    continue
                await self._redo(batch, result)
                continue
            if count and self._pacing.defers():
                # These envs' next steps belong to a train batch whose policy is the next update's. Their
                # answer waits for it, in a task: the batches that complete this train batch (other
                # streams') are still to come through here.
                await self._queue(result)
                group.create_task(self._redo_after_update(batch, result, self._pacing.updates))
                continue
            self._answer(batch, result)
            await self._queue(result)

    async def _redo_after_update(self, batch: Batch, result: StepResult, since: int) -> None:
        await self._pacing.updated(since)
        await self._redo(batch, result)

    async def _redo(self, batch: Batch, result: StepResult) -> None:
        """Answers ``batch`` with the actions the updated policy chooses for its rows (``Acting.redo``)."""
        try:
            result = await asyncio.get_running_loop().run_in_executor(self._executor, self._acting.redo, result)
        except Exception as exc:
            _fail(batch, exc)
            return
        self._answer(batch, result)

    def _warn_overshoot(self) -> None:
        if self._pacing.redoes and self._pacing.allowance < 0:  # replay pacing overshoots by design: its credit is fractional
            log.warning(
                "acting_overshoot",
                unrolls=int(-self._pacing.allowance),
                hint="these unrolls were acted before the update they will train after; make "
                "training.batch_size a multiple of the envs whose rows arrive together",
            )

    def _answer(self, batch: Batch, result: StepResult) -> None:
        if result.invalid.any():
            log.error("policy_outputs_nonfinite", rows=int(result.invalid.sum()), batch=batch.size)
        batch.set_result({"action": result.actions, "invalid": result.invalid})
        self._on_batch(batch, result)

    async def _queue(self, result: StepResult) -> None:
        """The batch's completed unrolls into the bounded queue."""
        if result.unrolls is not None:
            for i in range(len(result.unrolls["slot"])):
                # Back-pressure: when training lags, this waits, and so do the next batches and the actors.
                await self._unrolls.put({k: v[i] for k, v in result.unrolls.items()})

    def detach(self, slots: np.ndarray, pending: asyncio.Future | None, release: Callable[[], None]) -> None:
        """After a stream ends: once its last rows are answered, forget its slots, then ``release``."""
        loop = asyncio.get_running_loop()

        def forget(_: object = None) -> None:
            try:
                job = loop.run_in_executor(self._executor, self._acting.forget, slots)
            except RuntimeError:  # the learner is shutting down and per-env state goes with it
                release()
                return
            job.add_done_callback(lambda _: release())

        if pending is not None and not pending.done():
            pending.add_done_callback(forget)
        else:
            forget()


def _step_on(acting: Acting, batch: Batch) -> StepResult:
    return acting.step(batch.inputs)


def _fail(batch: Batch, exc: Exception) -> None:
    """The policy failed on ``batch``: every stream with rows in it gets INTERNAL."""
    log.warning("inference_failed", rows=batch.size, error=repr(exc))
    batch.set_exception(InferenceError(f"inference failed: {exc!r}"))
