"""IMPALA mode: which parameter downloads the learner serves at once, so that no client can starve the others.

Three bounds. A connection holds at most its share of downloads. At most ``active`` downloads are
moving at once. A download whose chunk has not been taken in after ``stall_s`` (a client that stopped
reading, or whose window is closed) stops counting as moving, so it cannot keep a healthy actor's
download out; at most ``active`` such stalled downloads are kept, and past that the oldest is ended.
Each ends anyway at the send timeout (the caller's). A stalled download costs one chunk in gRPC's
send buffer: the parameters' bytes are shared by all downloads.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Awaitable


def _retrieve(write: asyncio.Future) -> None:
    """Takes the outcome of a write abandoned with its call, so asyncio does not report it as unretrieved."""
    if not write.cancelled():
        write.exception()


class Refused(Exception):
    """A download past a bound (-> RESOURCE_EXHAUSTED); the message says which."""


@dataclasses.dataclass(eq=False)
class Download:
    peer: str
    task: asyncio.Task | None
    stalled: bool = False


class ParamsGate:
    """Verbs: ``admit`` a download, ``send`` each of its chunks through it, ``release`` it when it ends."""

    def __init__(self, active: int, per_peer: int, stall_s: float) -> None:
        self._active_limit, self._per_peer, self._stall_s = active, per_peer, stall_s
        self._by_peer: collections.Counter[str] = collections.Counter()
        self._active: set[Download] = set()
        self._stalled: dict[Download, None] = {}
        """Oldest first."""
        self.evicted = 0
        """Stalled downloads ended to make room for newer stalled ones."""

    @property
    def active(self) -> int:
        return len(self._active)

    @property
    def stalled(self) -> int:
        return len(self._stalled)

    def held_by(self, peer: str) -> int:
        return self._by_peer[peer]

    def admit(self, peer: str) -> Download:
        """A new download for ``peer`` (the current task is ended if it must be evicted); raises Refused."""
        if len(self._active) >= self._active_limit:
            raise Refused(f"the learner already serves its maximum of {self._active_limit} parameter downloads at once")
        if self._by_peer[peer] >= self._per_peer:
            raise Refused(f"this connection already holds its maximum of {self._per_peer} parameter downloads")
        download = Download(peer, asyncio.current_task())
        self._by_peer[peer] += 1
        self._active.add(download)
        return download

    async def send(self, download: Download, write: Awaitable[None]) -> None:
        """Awaits ``write`` (one chunk); if it has not completed within ``stall_s``, the download counts as
        stalled from then on (making room for the oldest stalled one's end if need be)."""
        sending = asyncio.ensure_future(write)
        try:
            if not download.stalled:
                done, _ = await asyncio.wait([sending], timeout=self._stall_s)
                if not done:
                    self._stall(download)
            await sending
        finally:
            if not sending.done():  # the download was cancelled (send timeout, eviction, the client left)
                sending.cancel()
            sending.add_done_callback(_retrieve)


    def _stall(self, download: Download) -> None:
        self._active.discard(download)
        download.stalled = True
        self._stalled[download] = None
        while len(self._stalled) > self._active_limit:
            oldest = next(iter(self._stalled))
            del self._stalled[oldest]
            self.evicted += 1
            if oldest.task is not None:
                oldest.task.cancel()

    def release(self, download: Download) -> None:
        """After a download ended, however it ended; releasing twice is harmless."""
        if download.task is None:
            return
        download.task = None
        self._active.discard(download)
        self._stalled.pop(download, None)
        self._by_peer[download.peer] -= 1
        if not self._by_peer[download.peer]:
            del self._by_peer[download.peer]
