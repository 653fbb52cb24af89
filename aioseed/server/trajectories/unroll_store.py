"""Per-env trajectories assembled on the learner (pure NumPy).

Each env slot accumulates ``unroll_length + 1`` steps. A completed unroll is
emitted and its last ``overlap`` steps start the next one, so consecutive
unrolls of one env share their boundary step exactly as in SEED (overlap 1 for
V-trace; ``burn_in + 1`` for R2D2).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import numpy as np

from aioseed.types import Column, Unroll


class UnrollStore:
    """Verbs: ``append`` a batch of steps, ``rewrite_last`` of them, ``reset`` slots."""

    def __init__(
        self,
        unroll_length: int,
        columns: Mapping[str, Column],
        overlap: int = 1,
        first_step_only: Collection[str] = (),
    ) -> None:
        """``first_step_only`` columns (e.g. recurrent state) are kept per step but emitted for step 0 only."""
        if unroll_length < 1:
            raise ValueError(f"unroll_length must be >= 1, got {unroll_length}")
        if not 0 <= overlap <= unroll_length:
            raise ValueError(f"overlap must be in [0, unroll_length], got {overlap}")
        self.unroll_length = unroll_length
        self.overlap = overlap
        self._first_step_only = frozenset(first_step_only)
        if not self._first_step_only <= set(columns):
            raise ValueError(f"first_step_only names unknown columns: {sorted(self._first_step_only - set(columns))}")
        self._columns = {name: (tuple(shape), np.dtype(dtype)) for name, (shape, dtype) in columns.items()}
        self._capacity = 0
        self._buffers: dict[str, np.ndarray] = {}
        self._pos = np.zeros(0, np.int64)
        self._grow(16)

    @property
    def steps_per_unroll(self) -> int:
        return self.unroll_length + 1

    def append(self, slots: np.ndarray, step: Mapping[str, np.ndarray]) -> Unroll | None:
        """Appends one step for each of ``slots`` (distinct). Returns the completed unrolls.

        The result maps each column to ``[n, unroll_length + 1, ...]`` (``[n, ...]``
        for ``first_step_only`` columns) plus ``"slot": <int32>[n]``, or is None
        when no unroll completed.
        """
        if len(slots) == 0:
            return None
        self._ensure(int(slots.max()))
        pos = self._pos[slots]
        for name, buffer in self._buffers.items():
            buffer[slots, pos] = step[name]
        pos += 1
        self._pos[slots] = pos
        full = pos == self.steps_per_unroll
        if not full.any():
            return None
        done = slots[full]
        unrolls = {
            name: buffer[done, 0] if name in self._first_step_only else buffer[done]
            for name, buffer in self._buffers.items()
        }
        unrolls["slot"] = done.astype(np.int32)
        if self.overlap:
            for buffer in self._buffers.values():
                buffer[done, : self.overlap] = buffer[done, self.steps_per_unroll - self.overlap :]
        self._pos[done] = self.overlap
        return unrolls

    def rewrite_last(self, slots: np.ndarray, columns: Mapping[str, np.ndarray]) -> None:
        """Replaces ``columns`` of each slot's newest step (the one the last ``append`` gave it, or the
        step a completed unroll left as the next one's first); as in ``append``, columns the store does
        not keep are ignored. Unrolls already emitted keep theirs."""
        if len(slots) == 0:
            return
        pos = self._pos[slots] - 1
        if (pos < 0).any():
            raise ValueError(f"slots without a step to rewrite: {slots[pos < 0].tolist()}")
        for name, column in columns.items():
            if name in self._buffers:
                self._buffers[name][slots, pos] = column

    def reset(self, slots: np.ndarray) -> None:
        """Discards the partial unrolls of ``slots``."""
        slots = slots[slots < self._capacity]
        self._pos[slots] = 0

    def partial_length(self, slot: int) -> int:
        """Steps currently held for ``slot``."""
        return int(self._pos[slot]) if slot < self._capacity else 0

    def _ensure(self, max_slot: int) -> None:
        if max_slot >= self._capacity:
            self._grow(max(2 * self._capacity, max_slot + 1))

    def _grow(self, capacity: int) -> None:
        for name, (shape, dtype) in self._columns.items():
            buffer = np.zeros((capacity, self.steps_per_unroll, *shape), dtype)
            old = self._buffers.get(name)
            if old is not None:
                buffer[: self._capacity] = old
            self._buffers[name] = buffer
        pos = np.zeros(capacity, np.int64)
        pos[: self._capacity] = self._pos
        self._pos = pos
        self._capacity = capacity
