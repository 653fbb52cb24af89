"""Unroll queue -> prioritized replay -> time-major training batches, at a bounded replay ratio.

One task inserts completed unrolls into the replay as they arrive (new unrolls
get the priorities the agent gives them, else the largest seen). ``next_batch`` waits until the replay holds
``min_size`` unrolls and sampling one more batch keeps the replay ratio (unrolls
sampled per unroll inserted after the first ``min_size``) within bounds, then
samples and stacks in a thread. After each train step, ``update`` writes the new priorities back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
import structlog

from aioseed.server.trajectories.replay import Replay
from aioseed.types import TrainBatch, Unroll

log = structlog.get_logger()


class ReplayFeed:
    """The ``Source`` of agents that train from replay (R2D2, SAC). Verbs: ``run`` (the insert task),
    ``next_batch``, ``update``."""

    def __init__(
        self,
        replay: Replay,
        unrolls: asyncio.Queue[Unroll],
        batch_size: int,
        min_size: int,
        replay_ratio: float,
        per_unroll: Collection[str] = (),
        running: asyncio.Event | None = None,
        prioritize: Callable[[Sequence[Unroll]], np.ndarray | None] | None = None,
    ) -> None:
        """``running``: cleared while training is paused; inserts wait, so that the unroll queue fills and the
        actors stall, as with V-trace, instead of the replay taking and evicting unrolls no one trains on.
        ``prioritize``: new unrolls' priorities (R2D2's from its inference), computed in the insert thread;
        where it is None, returns None or gives NaN, they get the largest priority seen."""
        self.replay = replay
        self._unrolls = unrolls
        self._batch_size = batch_size
        self._min_size = min_size
        self._replay_ratio = replay_ratio
        self._earned_before = 0.0
        """Samples earned at earlier replay ratios, up to ``_counted_from`` inserts."""
        self._counted_from = min_size
        """Inserts from which the current ratio earns samples (the first ``min_size`` earn none)."""
        self._per_unroll = tuple(per_unroll)
        self._inserted = asyncio.Event()
        self._running = running
        self._prioritize = prioritize

    async def run(self) -> None:
        """Inserts completed unrolls as they arrive, up to 256 at a time."""
        while True:
            if self._running is not None:
                await self._running.wait()
            batch = [await self._unrolls.get()]
            while not self._unrolls.empty() and len(batch) < 256:
                batch.append(self._unrolls.get_nowait())
            await asyncio.to_thread(self._insert, batch)
            self._inserted.set()

    def _insert(self, batch: Sequence[Unroll]) -> None:
        """Copies the rows into the replay's columns, at their priorities."""
        self.replay.insert(batch, None if self._prioritize is None else self._prioritize(batch))

    @property
    def batches_sampled(self) -> float:
        """Train batches sampled from the replay so far, a restored replay's included."""
        return self.replay.sampled / self._batch_size

    def ready(self) -> bool:
        """Whether a batch may be sampled now: the replay is confirmed and holds ``min_size`` unrolls, and
        sampling keeps within the replay ratio of the unrolls inserted since the first ``min_size`` (the fill
        is no credit: counted in, it would let a learner faster than its actors take ``min_size`` x ratio
        unrolls, thousands of updates, from the warm-up's unrolls alone, and as many again after any stall)."""
        replay = self.replay
        within_ratio = replay.sampled <= self._earned(replay.inserted)  # the first batch is free
        return replay.confirmed and len(replay) >= self._min_size and within_ratio

    def _earned(self, inserted: int) -> float:
        return self._earned_before + self._replay_ratio * max(inserted - self._counted_from, 0)

    @property
    def replay_ratio(self) -> float:
        return self._replay_ratio

    def set_replay_ratio(self, ratio: float) -> None:
        """From now on each insert earns ``ratio`` samples; what was earned before stays (on the event loop)."""
        if not ratio > 0:
            raise ValueError(f"replay_ratio must be positive, got {ratio}")
        inserted = self.replay.inserted
        self._earned_before = self._earned(inserted)
        self._counted_from = max(inserted, self._counted_from)
        self._replay_ratio = ratio
        self._inserted.set()  # a waiting next_batch looks again

    def resume(self) -> None:
        """A restored replay's samples count as earned, whatever ratios earned them (a live change to the ratio before
        the checkpoint is not in the replay's save): it holds the current ratio from its restored counts on. Counted
        at the launch ratio instead, a ratio raised live left a resumed learner short of millions of samples, and
        acting, paced by the replay, waiting on it for good."""
        replay = self.replay
        self._earned_before = float(replay.sampled)
        self._counted_from = max(replay.inserted, self._min_size)
        self._inserted.set()

    async def next_batch(self) -> TrainBatch:
        """A sampled batch: time-major columns plus ``ids`` and ``weights`` (<float32>[B])."""
        while not self.ready():
            self._inserted.clear()
            await self._inserted.wait()
        return await asyncio.to_thread(self._sample)

    def _sample(self) -> TrainBatch:
        ids, columns, weights = self.replay.sample(self._batch_size)
        batch_major = {"slot", *self._per_unroll}
        batch = {name: column if name in batch_major else np.swapaxes(column, 0, 1) for name, column in columns.items()}
        batch["ids"], batch["weights"] = ids, weights
        return batch

    def update(self, batch: TrainBatch, metrics: dict[str, Any]) -> None:
        """Writes the train step's new priorities (popped from ``metrics``) back for ``batch["ids"]``."""
        ids, priorities = batch["ids"], metrics.pop("priorities")
        if self.replay.priority_exponent == 0:  # uniform replay (SAC): priorities do not matter
            return
        if not np.isfinite(priorities).all():  # the loss diverged; keep the old priorities and say so
            log.error("non_finite_priorities", count=int((~np.isfinite(priorities)).sum()))
            return
        self.replay.update_priorities(ids, priorities)

    def metrics(self) -> dict[str, float]:
        replay = self.replay
        return {
            "replay/size": float(len(replay)),
            "replay/capacity": float(replay.capacity),
            "replay/inserted": float(replay.inserted),
            "replay/sampled": float(replay.sampled),
            "replay/ratio": replay.sampled / max(replay.inserted, 1),
            "replay/bytes_per_step": replay.bytes_per_step,
        }
