"""The deadline batcher on plain asyncio: no TensorFlow, no gRPC."""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest

from aioseed.server.batching.batcher import Batcher, BatcherConfig


def rows(*values: int) -> dict[str, np.ndarray]:
    return {"x": np.array(values, np.int64)}


async def test_closes_at_max_batch_size_without_waiting_for_deadline() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=4, deadline_ms=10_000))
    futures = [batcher.submit(rows(i)) for i in range(4)]
    batch = await asyncio.wait_for(batcher.get(), 1.0)
    assert batch.size == 4 and batch.reason == "full"
    np.testing.assert_array_equal(batch.inputs["x"], [0, 1, 2, 3])
    batch.set_result({"y": batch.inputs["x"] * 10})
    assert [int((await f)["y"][0]) for f in futures] == [0, 10, 20, 30]


# Tolerance: the deadline timer never fires early (libuv rounds to whole
# milliseconds, hence 1 ms slack) and fires within 40 ms after the deadline.
DEADLINE_MS = 50.0
EARLY_SLACK_S = 0.001
LATE_SLACK_S = 0.040


async def test_closes_at_deadline_with_a_single_row() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=64, deadline_ms=DEADLINE_MS))
    start = time.monotonic()
    future = batcher.submit(rows(7))
    batch = await batcher.get()
    waited = time.monotonic() - start
    assert batch.size == 1 and batch.reason == "deadline"
    assert DEADLINE_MS / 1000 - EARLY_SLACK_S <= waited <= DEADLINE_MS / 1000 + LATE_SLACK_S
    assert DEADLINE_MS / 1000 - EARLY_SLACK_S <= batch.fill_seconds
    batch.set_result({"y": batch.inputs["x"] + 1})
    assert int((await future)["y"][0]) == 8


async def test_never_waits_for_a_full_batch_when_every_env_waits() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=256, deadline_ms=10_000))
    batcher.set_connected_rows(3)
    batcher.submit(rows(1))
    batcher.submit(rows(2, 3))
    batch = await asyncio.wait_for(batcher.get(), 1.0)
    assert batch.size == 3 and batch.reason == "all_waiting"
    # While those 3 rows are in flight a newly connected env's row is alone:
    batcher.set_connected_rows(4)
    batcher.submit(rows(4))
    second = await asyncio.wait_for(batcher.get(), 1.0)
    assert second.size == 1 and second.reason == "all_waiting"


async def test_runtime_change_applies_from_the_next_batch() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=8, deadline_ms=10_000))
    batcher.submit(rows(0))
    batcher.configure(max_batch_size=2, deadline_ms=5.0)
    assert batcher.config.max_batch_size == 2
    batcher.submit(rows(*range(1, 8)))  # the open batch still closes at 8
    first = await asyncio.wait_for(batcher.get(), 1.0)
    assert first.size == 8 and first.reason == "full"
    batcher.submit(rows(1, 2, 3))  # from now on, 2 rows and a 5 ms deadline
    second = await asyncio.wait_for(batcher.get(), 1.0)
    third = await asyncio.wait_for(batcher.get(), 1.0)
    assert (second.size, second.reason) == (2, "full")
    assert (third.size, third.reason) == (1, "deadline")


async def test_invalid_settings_are_refused_and_nothing_changes() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=8, deadline_ms=1.0))
    for bad in ({"max_batch_size": 0}, {"max_batch_size": -3}, {"deadline_ms": -1.0}, {"max_batch_size": 2.5}):
        with pytest.raises(ValueError):
            batcher.configure(**bad)
    assert batcher.config == BatcherConfig(max_batch_size=8, deadline_ms=1.0)


async def test_a_large_submission_is_split_and_reassembled_in_order() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=4, deadline_ms=1.0))
    future = batcher.submit(rows(*range(10)))
    sizes = []
    for _ in range(3):
        batch = await asyncio.wait_for(batcher.get(), 1.0)
        sizes.append(batch.size)
        batch.set_result({"y": batch.inputs["x"] * 2})
    assert sizes == [4, 4, 2]
    np.testing.assert_array_equal((await future)["y"], np.arange(10) * 2)


async def test_inference_error_reaches_every_waiter() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=3, deadline_ms=10_000))
    futures = [batcher.submit(rows(i)) for i in range(3)]
    batch = await batcher.get()
    batch.set_exception(RuntimeError("boom"))
    for future in futures:
        with pytest.raises(RuntimeError, match="boom"):
            await future


async def test_a_split_submission_fails_only_once_its_rows_in_later_batches_are_out_of_the_batcher() -> None:
    """Its stream ends when the future fails, and its slots are then forgotten: rows of it still queued would
    afterwards be stepped on slots a reconnecting actor gets back, as if they were its own."""
    batcher = Batcher(BatcherConfig(max_batch_size=4, deadline_ms=20))
    first = batcher.submit(rows(1, 2, 3))
    split = batcher.submit(rows(4, 5, 6))  # one row in the first batch, two in the second
    failed = await asyncio.wait_for(batcher.get(), 1.0)
    failed.set_exception(RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        await first
    assert not split.done()
    tail = await asyncio.wait_for(batcher.get(), 1.0)  # the deadline closes it
    tail.set_result({"y": tail.inputs["x"]})
    with pytest.raises(RuntimeError, match="boom"):
        await split


async def test_cancelled_caller_does_not_break_the_batch() -> None:
    batcher = Batcher(BatcherConfig(max_batch_size=3, deadline_ms=10_000))
    batcher.set_connected_rows(3)
    gone = batcher.submit(rows(1))
    waiting = asyncio.ensure_future(asyncio.shield(batcher.submit(rows(2))))
    gone.cancel()
    kept = batcher.submit(rows(3))
    batch = await asyncio.wait_for(batcher.get(), 1.0)
    assert batch.size == 3  # the cancelled caller's row is still run
    batch.set_result({"y": batch.inputs["x"] + 100})
    assert int((await waiting)["y"][0]) == 102
    assert int((await kept)["y"][0]) == 103
    # ... and the batcher keeps working afterwards.
    batcher.submit(rows(4))
    batcher.submit(rows(5))
    batcher.submit(rows(6))
    assert (await asyncio.wait_for(batcher.get(), 1.0)).size == 3
