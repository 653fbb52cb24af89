"""Where train batches come from: the ``Source`` protocol and V-trace's bounded unroll queue.

A source turns completed unrolls (from the inference loop's bounded queue) into
time-major batches ``[T + 1, B, ...]``. V-trace trains on each unroll once, in
arrival order (``UnrollQueue``); R2D2 samples from prioritized replay at a bounded
replay ratio (``aioseed.server.replay_feed.ReplayFeed``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Protocol

import numpy as np

from aioseed.types import TrainBatch, Unroll


class Source(Protocol):
    """Verbs: ``run`` (its background task, if any), ``next_batch``, ``update`` after a train step."""

    async def run(self) -> None:
        """Background work (the replay's inserts); returns at once when there is none."""
        ...

    async def next_batch(self) -> TrainBatch:
        """The next time-major batch, waiting until one can be made."""
        ...

    def update(self, batch: TrainBatch, metrics: dict[str, float]) -> None:
        """Feedback from the train step on ``batch`` (R2D2: new priorities), in the train thread; may pop its
        keys from ``metrics``."""
        ...

    def metrics(self) -> dict[str, float]:
        """Gauges for the metrics snapshot (e.g. ``replay/size``)."""
        ...


def stack_time_major(
    unrolls: list[Unroll], per_unroll: Collection[str] = ()
) -> TrainBatch:
    """B unrolls of ``[T + 1, ...]`` -> ``[T + 1, B, ...]``; ``slot`` and ``per_unroll`` columns become ``[B, ...]``."""
    batch_major = {"slot", *per_unroll}
    return {key: np.stack([u[key] for u in unrolls], axis=0 if key in batch_major else 1) for key in unrolls[0]}


class UnrollQueue:
    """V-trace's source: every ``batch_size`` unrolls from the queue, in order, make one batch.

    The queue is bounded, so when training lags the inference loop waits on it and
    the actors stall (back-pressure); nothing is dropped.
    """

    def __init__(
        self, unrolls: asyncio.Queue[Unroll], batch_size: int, per_unroll: Collection[str] = ()
    ) -> None:
        self._unrolls = unrolls
        self._batch_size = batch_size
        self._per_unroll = tuple(per_unroll)

    async def run(self) -> None:
        return

    async def next_batch(self) -> TrainBatch:
        unrolls = [await self._unrolls.get() for _ in range(self._batch_size)]
        return await asyncio.to_thread(stack_time_major, unrolls, self._per_unroll)

    def update(self, batch: TrainBatch, metrics: dict[str, float]) -> None:
        return

    def metrics(self) -> dict[str, float]:
        return {}
