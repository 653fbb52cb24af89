"""Prioritized sequence replay for R2D2, uniform for SAC (TF-free): a FIFO ring of unrolls over a sum tree.

Unrolls are stored by column: one preallocated array per column, ``[capacity, ...]`` (NumPy's zeroed
allocation, so memory is committed as the ring fills), so that a sample is one gather per column
instead of stacking B small arrays.

Unroll i is sampled with probability P(i) = p_i^alpha / sum_j p_j^alpha and
weighted by (N P(i))^-beta, normalised by the batch maximum (Schaul et al. 2016;
R2D2 uses alpha 0.9, beta 0.6). New unrolls get the given priorities, or the
largest priority seen so far. Ids returned by ``insert`` and ``sample`` count
insertions, so an update for an unroll that has been evicted since it was
sampled is ignored rather than applied to its successor. A lock serializes
inserts, samples, updates and saves.

A column of frame stacks (``stacked``: learner-side stacking) is stored as single frames and rebuilt at
sampling (``frame_codec``), 4x less memory for Atari's stacks of four.

``save`` writes a directory that ``restore`` reads back: one ``.npy`` per unroll
column, written from the column's array into a memory-mapped file (the replay is never copied
in memory), the priorities, and the counters and sampling RNG in ``meta.json``.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import structlog

from aioseed.server.trajectories import stamps
from aioseed.server.trajectories.frame_codec import decode, encode
from aioseed.server.trajectories.sum_tree import SumTree

log = structlog.get_logger()

Unroll = Mapping[str, Any]
FORMAT = 1
"""Version of the directory ``save`` writes."""
MIN_PRIORITY = 1e-6
"""Priorities are floored here so that every stored unroll stays reachable."""


class Replay:
    """Verbs: ``insert`` unrolls, ``sample`` a batch, ``update_priorities``."""

    def __init__(
        self,
        capacity: int,
        priority_exponent: float = 0.9,
        importance_exponent: float = 0.6,
        seed: int | None = None,
        stacked: str | None = None,
    ) -> None:
        """``stacked``: the column of frame stacks ``[L, depth, *frame]``, if any, to store as single frames."""
        self.capacity = capacity
        self.stacked = stacked
        self.priority_exponent = priority_exponent
        self.importance_exponent = importance_exponent
        self._rng = np.random.default_rng(seed)
        self._lock = threading.Lock()
        self._restored_layout: dict[str, Any] | None = None
        """The columns (shape, dtype) of restored unrolls, until the first new unroll is inserted."""
        self._clear()

    def __len__(self) -> int:
        return min(self.inserted, self.capacity)

    @property
    def confirmed(self) -> bool:
        """False after a restore until the first new unroll is inserted: only then is it known whether
        the restored unrolls match the run's (a restart with another unroll length or observation shape
        would sample batches that mix both, which cannot be stacked)."""
        return self._restored_layout is None

    def insert(self, unrolls: Sequence[Unroll], priorities: np.ndarray | None = None) -> np.ndarray:
        """Stores ``unrolls`` (all with the same columns), evicting the oldest when full. Returns their ids.
        ``priorities``: theirs; NaN, or None for all, gives the largest priority seen. The first insert after a
        restore discards the restored unrolls, with a warning, when their columns differ from these."""
        unrolls = [self._encoded(unroll) for unroll in unrolls]
        with self._lock:
            if unrolls:
                self._check_layout(_layout(unrolls[0]))
            priorities = np.full(len(unrolls), np.nan) if priorities is None else np.asarray(priorities, np.float64)
            priorities = self._checked(np.where(np.isnan(priorities), self._max_priority, priorities), len(unrolls))
            ids = np.arange(self.inserted, self.inserted + len(unrolls), dtype=np.int64)
            kept = slice(max(0, len(unrolls) - self.capacity), None)  # more than capacity at once: the newest
            positions = ids[kept] % self.capacity
            for position, unroll in zip(positions, unrolls[kept]):  # row by row: no stacked copy of a big batch
                for name, column in self._columns.items():
                    column[position] = unroll[name]
            self._tree.set(positions, priorities[kept] ** self.priority_exponent)
            self._max_priority = max(self._max_priority, float(priorities.max(initial=0.0)))
            self.inserted += len(unrolls)
            return ids

    def _check_layout(self, layout: dict[str, list[Any]]) -> None:
        """Allocates the columns for the first unrolls; after a restore, keeps the restored ones only if
        ``layout`` matches theirs."""
        if self._restored_layout is not None:
            if layout != self._restored_layout:
                why = "the restored unrolls' columns differ from the new ones"
                log.warning("replay_discarded", reason=why, restored=self._restored_layout, new=layout)
                self._clear()
            self._restored_layout = None
        if self._stored_layout is None:
            self._allocate(layout)
        elif layout != self._stored_layout:
            raise ValueError(f"unrolls with columns {layout} cannot join a replay of {self._stored_layout}")

    def _allocate(self, layout: dict[str, list[Any]]) -> None:
        self._stored_layout = layout
        self._columns = {name: np.zeros((self.capacity, *shape), np.dtype(dtype)) for name, (shape, dtype) in layout.items()}

    def sample(self, batch_size: int) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray]:
        """``batch_size`` unrolls drawn with replacement by priority: (ids, their columns ``[batch_size, ...]``,
        importance weights). The rows come in random order, so any slice of the batch (a fused update's
        minibatch) is a sample of the whole replay."""
        with self._lock:
            size = len(self)
            if size == 0:
                raise LookupError("sample from an empty replay")
            total = self._tree.total
            # Stratified: one draw from each of batch_size equal slices of the priority mass. The slices' draws
            # come out in the tree's order (by position: by age under uniform priorities), hence the shuffle.
            masses = (np.arange(batch_size) + self._rng.random(batch_size)) * (total / batch_size)
            positions = self._tree.find(np.minimum(masses, np.nextafter(total, 0.0)))
            positions = positions[self._rng.permutation(batch_size)]
            probabilities = self._tree.get(positions) / total
            weights = (size * probabilities) ** -self.importance_exponent
            weights = (weights / weights.max()).astype(np.float32)
            oldest = self.inserted - size
            ids = oldest + (positions - oldest) % self.capacity
            self.sampled += batch_size
            columns = {name: column[positions] for name, column in self._columns.items()}
        return ids, self._decoded(columns), weights

    def _encoded(self, unroll: Unroll) -> Unroll:
        """``unroll`` as stored: the stacked column as its frames and clears."""
        if self.stacked is None:
            return unroll
        frames, clears = encode(np.asarray(unroll[self.stacked]))
        rest = {name: value for name, value in unroll.items() if name != self.stacked}
        return {**rest, f"{self.stacked}.frames": frames, f"{self.stacked}.clears": clears}

    def _decoded(self, columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Sampled ``columns`` with the stacked column rebuilt from its frames and clears."""
        if self.stacked is None:
            return columns
        frames, clears = columns.pop(f"{self.stacked}.frames"), columns.pop(f"{self.stacked}.clears")
        columns[self.stacked] = decode(frames, clears, depth=frames.shape[1] - clears.shape[1] + 1)
        return columns

    @property
    def bytes_per_step(self) -> float:
        """What one stored agent step takes: an unroll's bytes in every column over its steps (0 before the
        first unroll)."""
        layout = self._stored_layout
        if not layout or "reward" not in layout:
            return 0.0
        unroll = sum(int(np.prod(shape)) * np.dtype(dtype).itemsize for shape, dtype in layout.values())
        return unroll / layout["reward"][0][0]

    def update_priorities(self, ids: np.ndarray, priorities: np.ndarray) -> int:
        """Sets the priorities of sampled unrolls still stored; returns how many were updated."""
        with self._lock:
            ids = np.asarray(ids, np.int64)
            priorities = self._checked(priorities, len(ids))
            live = ids >= self.inserted - len(self)
            ids, priorities = ids[live], priorities[live]
            # A batch can hold an unroll twice; keep one update per unroll (the last).
            positions, last = np.unique((ids % self.capacity)[::-1], return_index=True)
            values = priorities[::-1][last]
            self._tree.set(positions, values**self.priority_exponent)
            self._max_priority = max(self._max_priority, float(values.max(initial=0.0)))
            return len(positions)

    def save(self, directory: pathlib.Path, progress: stamps.Counters | None = None) -> int:
        """Writes the stored unrolls, priorities, counters and RNG under ``directory`` (replacing what
        is there only once complete), stamped with ``progress``, the counters of the checkpoint it goes with;
        returns the bytes written. The lock is held throughout: an insert
        writes a row column by column, so a copy taken beside it could pair one unroll's observation with
        another's action. Inserts and samples wait for the save (a second or so per GiB)."""
        staging = directory.with_name(directory.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            with self._lock:
                size = len(self)  # positions 0 .. size - 1 hold unrolls, whether or not the ring has wrapped
                for name, column in (self._columns.items() if size else ()):
                    rows = np.lib.format.open_memmap(staging / f"{name}.npy", mode="w+", dtype=column.dtype, shape=(size, *column.shape[1:]))
                    rows[:] = column[:size]
                    rows.flush()
                    del rows
                np.save(staging / "priorities.npy", self._tree.get(np.arange(size)))
                meta = {
                    "format": FORMAT, "capacity": self.capacity, "size": size, "inserted": self.inserted,
                    "sampled": self.sampled, "max_priority": self._max_priority, "rng": self._rng.bit_generator.state,
                    "columns": self._stored_layout if size else {},
                }
                if progress is not None:
                    meta[stamps.KEY] = stamps.stamp(progress)
            (staging / "meta.json").write_text(json.dumps(meta))
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        # Swapped in by renames, so that a crash at any point leaves one complete copy (``restore`` looks for it).
        previous = directory.with_name(directory.name + ".old")
        shutil.rmtree(previous, ignore_errors=True)
        if directory.exists():
            directory.rename(previous)
        staging.rename(directory)
        shutil.rmtree(previous, ignore_errors=True)
        written = sum(path.stat().st_size for path in directory.iterdir())
        log.info("replay_saved", path=str(directory), unrolls=size, mib=round(written / 2**20, 1))
        return written

    def restore(self, directory: pathlib.Path, progress: stamps.Counters | None = None) -> bool:
        """Reads what ``save`` wrote into this (empty) replay; False, with a warning, when there is
        nothing to read, it was saved with another capacity, it cannot be read, or it is newer than the
        checkpoint restored at ``progress``. A save cut short by a crash left a complete copy beside
        ``directory``: the previous one, or the new one, whole; the one saved with that checkpoint is read first."""
        candidates = [directory, directory.with_name(directory.name + ".partial"), directory.with_name(directory.name + ".old")]
        saved = {candidate: _stamp(candidate) for candidate in candidates if (candidate / "meta.json").exists()}
        mine = None if progress is None else stamps.stamp(progress)
        for candidate in sorted(saved, key=lambda c: saved[c] != mine or mine is None):  # stable: the order above else
            try:
                if not stamps.loadable(saved[candidate], progress, candidate):
                    continue
                return self._read(candidate)
            except Exception as exc:  # damaged (a truncated file after a power loss): the next copy, else an empty replay
                with self._lock:
                    self._clear()
                log.warning("replay_not_restored", path=str(candidate), error=repr(exc))
        return False

    def _read(self, directory: pathlib.Path) -> bool:
        meta = json.loads((directory / "meta.json").read_text())
        if meta.get("format") != FORMAT or meta["capacity"] != self.capacity:
            log.warning("replay_not_restored", path=str(directory), saved_capacity=meta.get("capacity"), capacity=self.capacity)
            return False
        size = meta["size"]
        with self._lock:
            self._clear()
            if size:
                self._allocate(meta["columns"])
                for name, column in self._columns.items():
                    column[:size] = np.load(directory / f"{name}.npy", mmap_mode="r")
            self._tree.set(np.arange(size), np.load(directory / "priorities.npy"))
            self.inserted, self.sampled, self._max_priority = meta["inserted"], meta["sampled"], meta["max_priority"]
            self._rng.bit_generator.state = meta["rng"]
            self._restored_layout = meta["columns"] if size else None
        log.info("replay_restored", path=str(directory), unrolls=size, inserted=self.inserted)
        return True

    def _clear(self) -> None:
        """No unrolls, and the counters at zero."""
        self._stored_layout: dict[str, list[Any]] | None = None
        """Each column's [shape, dtype] (``_layout``), from the first unroll inserted or restored."""
        self._columns: dict[str, np.ndarray] = {}
        self._tree = SumTree(self.capacity)
        self._max_priority = 1.0
        self.inserted = 0
        """Unrolls inserted so far (the next unroll's id)."""
        self.sampled = 0
        """Unrolls sampled so far (with repetition)."""

    @staticmethod
    def _checked(priorities: np.ndarray, count: int) -> np.ndarray:
        priorities = np.asarray(priorities, np.float64)
        if priorities.shape != (count,) or not np.isfinite(priorities).all() or (priorities < 0).any():
            raise ValueError(f"need {count} finite priorities >= 0, got {priorities!r}")
        return np.maximum(priorities, MIN_PRIORITY)


def _layout(unroll: Unroll) -> dict[str, list[Any]]:
    """Each column's [shape, dtype] (as ``save`` writes them to meta.json)."""
    return {name: [list(np.shape(value)), np.asarray(value).dtype.str] for name, value in unroll.items()}


def _stamp(directory: pathlib.Path) -> dict[str, int] | None:
    """The stamp of the copy saved in ``directory``; None where it has none, or its meta.json is damaged (reading
    the copy then says so)."""
    try:
        return json.loads((directory / "meta.json").read_text()).get(stamps.KEY)
    except (OSError, ValueError, AttributeError):
        return None
