"""A bounded FIFO of completed unrolls that moves them in chunks (pure asyncio + NumPy).

Inference ``put``s the unrolls a batch completed as one chunk (batch-major
``[n, T + 1, ...]``); the prefetch task ``get``s exactly ``B`` of them. The
bound is counted in unrolls: ``put`` waits while the queue is full, which stalls
inference and, through it, the actors (back-pressure). Nothing is dropped.
"""

from __future__ import annotations

import asyncio
import collections

import numpy as np

Chunk = dict[str, np.ndarray]


class UnrollQueue:
    """Verbs: ``put`` a chunk, ``get`` n unrolls; ``depth`` for metrics."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._chunks: collections.deque[Chunk] = collections.deque()
        self._depth = 0
        self._changed = asyncio.Condition()

    @property
    def depth(self) -> int:
        """Unrolls waiting."""
        return self._depth

    async def put(self, chunk: Chunk) -> None:
        """Appends a chunk; waits while the queue is full (a chunk larger than the bound waits for empty)."""
        n = _size(chunk)
        async with self._changed:
            await self._changed.wait_for(lambda: self._depth == 0 or self._depth + n <= self.capacity)
            self._chunks.append(chunk)
            self._depth += n
            self._changed.notify_all()

    async def get(self, n: int) -> Chunk:
        """Removes the oldest ``n`` (<= capacity) unrolls, as one batch-major chunk."""
        async with self._changed:
            await self._changed.wait_for(lambda: self._depth >= n)
            parts: list[Chunk] = []
            taken = 0
            while taken < n and self._chunks:
                chunk = self._chunks[0]
                size = _size(chunk)
                if taken + size <= n:
                    parts.append(self._chunks.popleft())
                    taken += size
                else:
                    rest = n - taken
                    parts.append({k: v[:rest] for k, v in chunk.items()})
                    self._chunks[0] = {k: v[rest:] for k, v in chunk.items()}
                    taken = n
            self._depth -= taken
            self._changed.notify_all()
        if len(parts) == 1:
            return parts[0]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _size(chunk: Chunk) -> int:
    return len(next(iter(chunk.values())))
