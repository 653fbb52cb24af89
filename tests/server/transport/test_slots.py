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


def test_a_hello_refused_for_want_of_slots_leaves_other_actors_reservations_in_place() -> None:
    clock = Clock()
    table = SlotTable(max_slots=6, grace_s=30.0, clock=clock)
    a = table.acquire([1, 2]).tolist()
    table.acquire([3, 4])
    table.release(a)  # A drops: slots 0 and 1 are kept for it
    with pytest.raises(SlotsExhausted):
        table.acquire([5, 6, 7, 8, 9])  # C asks for more than there are: it used to take A's, then free them
    assert table.reserved == 2
    assert table.acquire([10, 11]).tolist() == [4, 5]  # D gets the free ones
    assert table.acquire([1, 2], previous=a).tolist() == a  # A comes back on its own


def test_reservations_expire_in_the_order_they_were_made_and_only_once_due() -> None:
    clock = Clock()
    table = SlotTable(max_slots=4, grace_s=5.0, clock=clock)
    table.acquire([1, 2, 3])
    table.release([2])
    clock.now = 1.0
    table.release([0])
    clock.now = 2.0
    table.release([1])
    clock.now = 5.5  # slot 2's reservation is due; 0's (6.0) and 1's (7.0) are not
    assert table.reserved == 2
    assert table.acquire([9]).tolist() == [2]  # the expired one is free again
    assert table.acquire([1], previous=[0]).tolist() == [0]  # the others still hold for their run_ids
    clock.now = 7.0
    assert table.reserved == 0
