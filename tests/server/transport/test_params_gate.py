"""ParamsGate alone: the per-connection share, the cap on moving downloads, and stalled downloads
making room (the oldest ended past the cap). Real gRPC runs in test_impala_mode.py."""

from __future__ import annotations

import asyncio

import pytest

from aioseed.server.transport.params_gate import ParamsGate, Refused


async def test_a_connection_holds_at_most_its_share_and_moving_downloads_at_most_the_cap() -> None:
    gate = ParamsGate(active=3, per_peer=2, stall_s=60.0)
    first, second = gate.admit("a"), gate.admit("a")
    with pytest.raises(Refused, match="this connection already holds its maximum of 2"):
        gate.admit("a")
    third = gate.admit("b")
    with pytest.raises(Refused, match="maximum of 3 parameter downloads at once"):
        gate.admit("c")
    gate.release(first)
    gate.release(first)  # twice is harmless
    assert gate.held_by("a") == 1 and gate.active == 2
    gate.admit("c")
    for download in (second, third):
        gate.release(download)
    assert gate.held_by("a") == gate.held_by("b") == 0


async def test_a_stalled_download_makes_room_and_past_the_cap_the_oldest_stalled_one_ends() -> None:
    gate = ParamsGate(active=2, per_peer=10, stall_s=0.01)
    never = asyncio.get_running_loop().create_future()  # a chunk the client never takes in

    async def stalled_download() -> None:
        download = gate.admit("slow")
        try:
            await gate.send(download, asyncio.shield(never))
        finally:
            gate.release(download)

    oldest = asyncio.create_task(stalled_download())
    newer = asyncio.create_task(stalled_download())
    while gate.stalled < 2:
        await asyncio.sleep(0.01)
    assert gate.active == 0  # both stalled: room for two moving downloads
    moving = gate.admit("healthy")
    await gate.send(moving, asyncio.sleep(0))  # a chunk taken in at once stays moving
    assert gate.active == 1 and gate.stalled == 2
    newest = asyncio.create_task(stalled_download())
    with pytest.raises(asyncio.CancelledError):
        await oldest  # ended for the newest, past the cap of 2 stalled
    assert gate.evicted == 1 and not newer.done()
    while gate.stalled < 2:
        await asyncio.sleep(0.01)
    for task in (newer, newest):
        task.cancel()
    await asyncio.gather(newer, newest, return_exceptions=True)
    gate.release(moving)
    assert gate.stalled == gate.active == 0 and gate.held_by("slow") == 0
