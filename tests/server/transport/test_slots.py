"""Env slot assignment, regrant on reconnect and the grace period."""

from __future__ import annotations

import pytest

from aioseed.server.transport.slots import SlotsExhausted, SlotTable


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lowest_free_slots_first_and_exhaustion() -> None:
    table = SlotTable(max_slots=4, grace_s=0.0)
    assert table.acquire([1, 2]).tolist() == [0, 1]
    assert table.acquire([3, 4]).tolist() == [2, 3]
    with pytest.raises(SlotsExhausted):
        table.acquire([5])
    table.release([1])
    assert table.acquire([5]).tolist() == [1]
    assert table.connected == 4


def test_reconnect_within_grace_gets_the_same_slots_and_others_do_not() -> None:
    clock = Clock()
    table = SlotTable(max_slots=8, grace_s=5.0, clock=clock)
    first = table.acquire([10, 11]).tolist()
    table.release(first)
    assert table.acquire([99]).tolist() == [2]  # reserved slots are not handed to others
    assert table.acquire([10, 11], previous=first).tolist() == first
    stranger = table.acquire([12], previous=[first[0]]).tolist()
    assert stranger != [first[0]]  # owned by someone else: a fresh slot instead


def test_reservation_expires_after_the_grace_period() -> None:
    clock = Clock()
    table = SlotTable(max_slots=2, grace_s=5.0, clock=clock)
    slots = table.acquire([1, 2]).tolist()
    table.release(slots)
    assert table.reserved == 2
    clock.now = 5.0
    assert table.reserved == 0 and table.acquire([3]).tolist() == [0]


def test_with_no_slot_free_the_oldest_reservation_is_handed_out() -> None:
    """Streams that connect with fresh run_ids and drop, over and over, would otherwise keep every slot in
    reserve for the grace period, and every new actor would be refused."""
    clock = Clock()
    table = SlotTable(max_slots=2, grace_s=30.0, clock=clock)
    table.acquire([1, 2])
    table.release([0])
    clock.now = 1.0
    table.release([1])
    assert table.acquire([3]).tolist() == [0]  # reserved for run_id 1 since t=0: the oldest
    assert table.acquire([2], previous=[1]).tolist() == [1]  # the younger reservation still holds
    with pytest.raises(SlotsExhausted):
        table.acquire([4])


def test_previous_slots_never_handed_out_are_not_granted_by_number() -> None:
    """Per-slot state is sized by the highest slot: asking for slot 65535 must not make it 65,536 rows."""
    table = SlotTable(max_slots=65536, grace_s=1.0)
    assert table.acquire([7, 8], previous=[65535, 9]).tolist() == [0, 1]
    assert table.acquire([1, 2, 3]).tolist() == [2, 3, 4]
