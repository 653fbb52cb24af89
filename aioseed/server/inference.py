"""The inference loop: closed batches -> policy in a worker thread -> unrolls and actions.

Each batch runs in a worker thread: one by default, or one per inference device (``lanes``), so
that several batches run the policy at once. Per-env state (``EnvTable``, ``UnrollStore``,
frame stacks, recurrent state) is touched only under one lock, before and after the policy, so
batches and disconnects apply in a single order; concurrent batches hold different envs, since an
env's next row comes only after its action. The event loop only moves batches, futures and
completed unrolls.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from typing import Protocol

import numpy as np
import structlog

from aioseed.server.batcher import Batch, Batcher
from aioseed.server.core_states import CoreStates
from aioseed.server.env_table import EnvTable, EpisodeBoundaries
from aioseed.server.frame_stack import FrameStacker
from aioseed.server.unroll_store import UnrollStore
from aioseed.types import Rows, Step, Unroll

log = structlog.get_logger()


class Policy(Protocol):
    """What the inference loop needs from an agent."""

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Runs the policy on ``[B, *obs_shape]`` rows of env ``slots`` and their recurrent state
        (``evaluation``: <bool>[B] rows of evaluation envs, or None; ``rewards``: <float32>[B] the
        rewards that led to the rows, zero where an episode or a fresh unroll starts).

        Returns row-aligned outputs (incl. ``"action"``) and the next state.
        """
        ...


class InferenceError(RuntimeError):
    """The policy failed on a batch; every stream with rows in it is told."""


@dataclasses.dataclass
class StepResult:
    actions: np.ndarray
    boundaries: EpisodeBoundaries
    unrolls: Unroll | None
    """Completed unrolls, stacked: each column ``[U, T + 1, ...]`` and ``slot`` ``[U]``."""
    seconds: float
    """Worker-thread time of the policy and the bookkeeping."""
    invalid: np.ndarray
    """<bool>[B] rows whose policy outputs are non-finite or whose action is out of range (no action is sent)."""
    evaluation_episodes: np.ndarray | None = None
    """<bool>[E] which of the batch's ended episodes (``boundaries.episode_returns``) were evaluation envs'."""


def invalid_rows(outputs: Mapping[str, np.ndarray], num_actions: int) -> np.ndarray:
    """<bool>[B] rows with a non-finite float output or an action outside ``[0, num_actions)``.

    Non-finite weights make the policy's logits NaN, and sampling from NaN logits gives any index.
    """
    action = outputs["action"]
    invalid = (action < 0) | (action >= num_actions)
    for value in outputs.values():
        if value.dtype.kind == "f":
            invalid |= ~np.isfinite(value.reshape(len(value), -1)).all(axis=1)
    return invalid


def observe(envs: EnvTable, store: UnrollStore, inputs: Rows) -> EpisodeBoundaries:
    """Updates per-env state for a batch of rows; fresh rows discard their partial unrolls."""
    slots = inputs["slot"]
    boundaries = envs.observe(slots, inputs["run_id"], inputs["reward"], inputs["flags"])
    if boundaries.fresh.any():
        store.reset(slots[boundaries.fresh])
    return boundaries


def append(
    store: UnrollStore,
    inputs: Rows,
    observations: np.ndarray,
    boundaries: EpisodeBoundaries,
    outputs: Mapping[str, np.ndarray],
    version: int,
) -> Unroll | None:
    """Appends one step per row (``observations`` as the policy saw them); returns completed unrolls.

    Rows of evaluation envs are never stored.
    """
    step = Step(
        observation=observations,
        # A fresh row's reward may have been seen already (EnvTable): it counts nowhere, and a network
        # that takes rewards as input saw 0 there at inference, as training will.
        reward=np.where(boundaries.fresh, np.float32(0), inputs["reward"]),
        done=boundaries.done,
        phantom=boundaries.phantom,
        version=np.full(len(observations), version, np.int64),
    )
    columns = {**step, **outputs}
    evaluation = inputs["evaluation"]
    if evaluation.any():
        learn = ~evaluation
        return store.append(inputs["slot"][learn], {name: column[learn] for name, column in columns.items()})
    return store.append(inputs["slot"], columns)


class InferenceLoop:
    """Verbs: ``run`` (a task), ``submit`` rows, ``detach`` a stream's slots; ``step`` is one batch."""

    def __init__(
        self,
        batcher: Batcher,
        policy: Policy,
        envs: EnvTable,
        store: UnrollStore,
        unrolls: asyncio.Queue[Unroll],
        version: Callable[[], int],
        on_batch: Callable[[Batch, StepResult], None],
        num_actions: int,
        stacker: FrameStacker | None = None,
        states: CoreStates | None = None,
        lanes: int = 1,
    ) -> None:
        """``lanes``: batches whose policy may run at once (one per inference device)."""
        self._batcher = batcher
        self._policy = policy
        self._num_actions = num_actions
        self._envs = envs
        self._store = store
        self._unrolls = unrolls
        self._version = version
        self._on_batch = on_batch
        self._stacker = stacker
        self._states = states or CoreStates({})
        self._lanes = lanes
        self._executor = concurrent.futures.ThreadPoolExecutor(lanes, thread_name_prefix="inference")
        self._per_env_state = threading.Lock()

    @property
    def queue_depth(self) -> int:
        """Completed unrolls in the bounded queue, waiting for the source."""
        return self._unrolls.qsize()

    def metrics(self) -> dict[str, float]:
        """Gauges of the unroll queue between inference and the train batches."""
        return {"queue/depth": float(self.queue_depth), "queue/capacity": float(self._unrolls.maxsize)}

    def submit(self, rows: Rows) -> asyncio.Future[dict[str, np.ndarray]]:
        return self._batcher.submit(rows)

    async def run(self) -> None:
        """Two stages: ``_start`` hands each batch to the worker thread as soon as it closes, so
        the next batch fills and starts while one runs; ``_finish`` answers batches in order,
        then queues their completed unrolls, which waits while training lags (back-pressure)."""
        started: asyncio.Queue[tuple[Batch, asyncio.Future[StepResult]]] = asyncio.Queue(self._lanes)
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._start(started), name="inference-start")
                group.create_task(self._finish(started), name="inference-finish")
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)

    async def _start(self, started: asyncio.Queue[tuple[Batch, asyncio.Future[StepResult]]]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._batcher.get()
            await started.put((batch, loop.run_in_executor(self._executor, self.step, batch.inputs)))

    async def _finish(self, started: asyncio.Queue[tuple[Batch, asyncio.Future[StepResult]]]) -> None:
        while True:
            batch, job = await started.get()
            try:
                result = await job
            except Exception as exc:  # the learner carries on; the streams get INTERNAL
                log.warning("inference_failed", rows=batch.size, error=repr(exc))
                batch.set_exception(InferenceError(f"inference failed: {exc!r}"))
                continue
            if result.invalid.any():
                log.error("policy_outputs_nonfinite", rows=int(result.invalid.sum()), batch=batch.size)
            batch.set_result({"action": result.actions, "invalid": result.invalid})
            self._on_batch(batch, result)
            if result.unrolls is not None:
                for i in range(len(result.unrolls["slot"])):
                    # Back-pressure: when training lags, this waits, and so do the next batches and the actors.
                    await self._unrolls.put({k: v[i] for k, v in result.unrolls.items()})

    def detach(self, slots: np.ndarray, pending: asyncio.Future | None, release: Callable[[], None]) -> None:
        """After a stream ends: once its last rows are answered, forget its slots, then ``release``."""
        loop = asyncio.get_running_loop()

        def forget(_: object = None) -> None:
            try:
                job = loop.run_in_executor(self._executor, self._forget, slots)
            except RuntimeError:  # the learner is shutting down and per-env state goes with it
                release()
                return
            job.add_done_callback(lambda _: release())

        if pending is not None and not pending.done():
            pending.add_done_callback(forget)
        else:
            forget()

    def _forget(self, slots: np.ndarray) -> None:
        with self._per_env_state:
            self._envs.forget(slots)

    def step(self, inputs: Rows) -> StepResult:
        """One closed batch, in a worker thread: per-env state, stacking, the policy, unrolls."""
        started = time.perf_counter()
        slots = inputs["slot"]
        with self._per_env_state:
            boundaries = observe(self._envs, self._store, inputs)
            observations, starts = inputs["observation"], boundaries.starts
            if self._stacker is not None:
                observations = self._stacker.push(slots, observations, starts)
            state = self._states.read(slots, starts)
        evaluation = inputs["evaluation"]
        if evaluation.any():  # frames count the envs that train
            boundaries.env_steps = int((~boundaries.phantom & ~evaluation).sum())
        rewards = np.where(starts, np.float32(0), inputs["reward"]).astype(np.float32)
        outputs, next_state = self._policy.infer(observations, state, slots, evaluation, rewards)
        invalid = invalid_rows(outputs, self._num_actions)
        if invalid.any():  # stored as action 0; the rows' streams get INTERNAL instead of an action
            outputs["action"] = np.where(invalid, 0, outputs["action"]).astype(outputs["action"].dtype)
        with self._per_env_state:
            self._states.write(slots, next_state)
            # Unrolls keep the state each step started from; training replays the core from the first one.
            unrolls = append(self._store, inputs, observations, boundaries, {**outputs, **state}, self._version())
        evaluating = evaluation[boundaries.ended_rows]
        return StepResult(outputs["action"], boundaries, unrolls, time.perf_counter() - started, invalid, evaluating)
