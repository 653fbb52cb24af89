"""Env slot ownership: which stream holds which slots (event-loop only)."""

from __future__ import annotations

import collections
import heapq
import time
from collections.abc import Callable, Sequence

import numpy as np


class SlotsExhausted(RuntimeError):
    """No free slots left for a new stream."""


class SlotTable:
    """Verbs: ``acquire`` slots for a stream, ``release`` them when it ends.

    A released slot stays reserved for its run_id for ``grace_s`` seconds, so
    an actor that reconnects quickly gets the same slots back, unless no other
    slot is left: then the oldest reservation is handed out. Free slots are
    handed out lowest first, which keeps the learner's per-slot arrays small.
    """

    def __init__(self, max_slots: int, grace_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_slots = max_slots
        self._grace_s = grace_s
        self._clock = clock
        self._next = 0  # slots >= _next have never been handed out
        self._free_heap: list[int] = []
        self._free: set[int] = set()
        self._owned: dict[int, int] = {}  # slot -> run_id of the stream holding it
        # slot -> (run_id, expiry), oldest first (an OrderedDict: its front stays O(1) to reach as it is removed)
        self._reserved: collections.OrderedDict[int, tuple[int, float]] = collections.OrderedDict()

    @property
    def connected(self) -> int:
        """Slots held by live streams."""
        return len(self._owned)

    @property
    def reserved(self) -> int:
        """Slots of ended streams still kept for their run_ids (the grace period)."""
        self._expire()
        return len(self._reserved)

    def acquire(self, run_ids: Sequence[int], previous: Sequence[int] = ()) -> np.ndarray:
        """One slot per run_id; ``previous[i]`` comes back when it was handed out before and is now free
        or reserved for ``run_ids[i]``. Slots never handed out are not granted by number, so per-slot
        state stays sized by the envs connected, not by what a client asks for."""
        self._expire()
        # Refused before anything is taken: a rollback would free the reservations it took, not reserve them again.
        if len(run_ids) > len(self._free) + self._max_slots - self._next + len(self._reserved):
            raise SlotsExhausted(f"all {self._max_slots} env slots are in use")
        chosen: list[int] = []
        for i, run_id in enumerate(run_ids):
            wanted = int(previous[i]) if i < len(previous) else -1
            slot = wanted if self._take(wanted, run_id) else self._take_any()
            assert slot >= 0, "each run_id takes one slot of those counted"
            self._owned[slot] = int(run_id)
            chosen.append(slot)
        return np.array(chosen, np.int32)

    def release(self, slots: Sequence[int]) -> None:
        """Ends ownership; the slots stay reserved for their run_ids during the grace period."""
        expiry = self._clock() + self._grace_s
        for slot in slots:
            run_id = self._owned.pop(int(slot), None)
            if run_id is not None:
                self._reserved[int(slot)] = (run_id, expiry)
        self._expire()

    def _take(self, slot: int, run_id: int) -> bool:
        if not 0 <= slot < self._max_slots or slot in self._owned:
            return False
        reserved = self._reserved.get(slot)
        if reserved is not None:
            if reserved[0] != run_id:
                return False
            del self._reserved[slot]
            return True
        if slot in self._free:
            self._free.discard(slot)
            return True
        return False  # never handed out: granting it would size per-slot state by a client's number

    def _take_any(self) -> int:
        while self._free_heap:
            slot = heapq.heappop(self._free_heap)
            if slot in self._free:
                self._free.discard(slot)
                return slot
        if self._next < self._max_slots:
            self._next += 1
            return self._next - 1
        if self._reserved:  # none free: the oldest reservation goes first (streams that connect and drop over
            slot = next(iter(self._reserved))  # and over would otherwise hold every slot in reserve)
            del self._reserved[slot]
            return slot
        return -1

    def _push_free(self, slot: int) -> None:
        self._free.add(slot)
        heapq.heappush(self._free_heap, slot)

    def _expire(self) -> None:
        """Reservations are made with the same grace, so they expire in the order they were made: only the
        expired ones at the front are looked at (a scan of all made a mass reconnect quadratic)."""
        now = self._clock()
        while self._reserved:
            slot, (_, expiry) = next(iter(self._reserved.items()))
            if expiry > now:
                break
            del self._reserved[slot]
            self._push_free(slot)
