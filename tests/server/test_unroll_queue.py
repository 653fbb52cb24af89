"""The bounded unroll queue: FIFO across chunk boundaries and back-pressure."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from aioseed.server.unroll_queue import UnrollQueue


def chunk(*ids: int) -> dict[str, np.ndarray]:
    return {"slot": np.array(ids, np.int32), "x": np.array(ids, np.float32)[:, None] * np.ones((1, 3))}


async def test_get_returns_exactly_n_in_order_across_chunks() -> None:
    queue = UnrollQueue(capacity=10)
    await queue.put(chunk(1, 2, 3))
    await queue.put(chunk(4, 5))
    await queue.put(chunk(6, 7, 8))
    first = await queue.get(4)
    np.testing.assert_array_equal(first["slot"], [1, 2, 3, 4])
    assert first["x"].shape == (4, 3)
    second = await queue.get(4)
    np.testing.assert_array_equal(second["slot"], [5, 6, 7, 8])
    assert queue.depth == 0


async def test_put_waits_while_full_and_nothing_is_dropped() -> None:
    queue = UnrollQueue(capacity=4)
    await queue.put(chunk(1, 2, 3))
    blocked = asyncio.create_task(queue.put(chunk(4, 5)))
    await asyncio.sleep(0.05)
    assert not blocked.done() and queue.depth == 3  # back-pressure
    np.testing.assert_array_equal((await queue.get(2))["slot"], [1, 2])
    await asyncio.wait_for(blocked, 1.0)
    np.testing.assert_array_equal((await queue.get(3))["slot"], [3, 4, 5])


async def test_get_waits_for_enough_unrolls() -> None:
    queue = UnrollQueue(capacity=8)
    waiting = asyncio.create_task(queue.get(3))
    await queue.put(chunk(1, 2))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    await queue.put(chunk(3))
    np.testing.assert_array_equal((await asyncio.wait_for(waiting, 1.0))["slot"], [1, 2, 3])


async def test_a_chunk_larger_than_the_bound_enters_an_empty_queue() -> None:
    queue = UnrollQueue(capacity=2)
    await asyncio.wait_for(queue.put(chunk(1, 2, 3)), 1.0)
    assert queue.depth == 3


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        UnrollQueue(0)
