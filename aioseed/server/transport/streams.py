"""The connected streams as the learner keeps them, the limits their calls are held to, the two verbs
the transport needs of inference, and in-process streams (Sebulba's actor threads)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np

from aioseed.errors import InvalidInput
from aioseed.types import Rows


@dataclasses.dataclass
class StreamInfo:
    """One connected stream, as the console and logs see it."""

    peer: str
    actor: str
    slots: np.ndarray
    task: asyncio.Task | None
    """The handler's task; cancelling it ends the stream (CANCELLED on the actor's side)."""
    connected_at: float = dataclasses.field(default_factory=time.time)
    last_seen: float = dataclasses.field(default_factory=time.time)
    steps: int = 0
    steps_per_s: float = 0.0
    """Env steps per second over the last metrics interval."""
    pending: asyncio.Future | None = None
    """The rows in flight; the slots are forgotten only once they are answered."""
    awaiting_since: float | None = None
    """Monotonic time since which the learner has waited for the stream's next message, counted from the
    moment it handed over its answer (None while it handles a message, or waits for its own answer)."""
    expired: bool = False
    """The stream sent nothing for too long and is being closed (DEADLINE_EXCEEDED)."""
    sending: bool = False
    """An answer is being handed to the actor (``awaiting_since`` runs: taking it in is the actor's time)."""
    unread: bool = False
    """Expired with an answer it never took in: no status can follow that answer and grpc.aio cannot reset a
    stream, so it stays open on the wire, and counted, until its client or connection closes it."""
    _counted: tuple[float, int] = (0.0, 0)

    def describe(self, stream_id: int) -> dict[str, object]:
        """The stream as the console and /api/actors list it."""
        return {
            "stream": stream_id,
            "actor": self.actor,
            "address": self.peer,
            "envs": len(self.slots),
            "steps": self.steps,
            "steps_per_s": self.steps_per_s,
            "connected_since": self.connected_at,
            "last_seen": self.last_seen,
            "unread": self.unread,
        }

    def update_rate(self, now: float) -> None:
        """Called once per metrics interval."""
        then, steps = self._counted
        if then:
            self.steps_per_s = (self.steps - steps) / max(now - then, 1e-9)
        self._counted = (now, self.steps)


def envs_that_fit(longest_message: Callable[[int], int], max_message_bytes: int, most: int) -> int:
    """The most envs per stream, up to ``most``, whose longest valid message (``longest_message(K)`` bytes, affine
    in K) gRPC lets in: a stream of more would be welcomed, then have every message refused by gRPC itself
    (RESOURCE_EXHAUSTED, which actors retry forever)."""
    one, two = longest_message(1), longest_message(2)
    if one > max_message_bytes:
        raise InvalidInput(f"one env's messages take {one} bytes, past server.max_message_bytes ({max_message_bytes}): raise it")
    return min(most, 1 + (max_message_bytes - one) // (two - one))


@dataclasses.dataclass(frozen=True)
class StreamLimits:
    """Past any of these a call gets RESOURCE_EXHAUSTED; streams already connected carry on."""

    streams: int
    """Concurrent streams."""
    envs_per_stream: int
    """K one hello may declare (beyond it the hello is INVALID_ARGUMENT)."""
    envs_per_actor: int
    """Env slots held at once by the streams of one connection (one actor process)."""
    slots: int = 65536
    """Env slots in all (a hello's previous_slots beyond are INVALID_ARGUMENT)."""
    hello_timeout_s: float = 10.0
    """A stream that sends no hello within this is closed (DEADLINE_EXCEEDED); until then it counts
    against ``streams``."""
    params_calls: int = 64
    """IMPALA mode: parameter downloads moving at once; more get RESOURCE_EXHAUSTED (not a handshake limit)."""
    params_calls_per_peer: int = 4
    """IMPALA mode: parameter downloads one connection may hold at once; more get RESOURCE_EXHAUSTED."""
    params_timeout_s: float = 10.0
    """IMPALA mode: a download not taken in within this ends with DEADLINE_EXCEEDED."""
    params_stall_s: float = 1.0
    """IMPALA mode: a download whose chunk waits this long stops counting against ``params_calls``."""
    upload_bytes: int = 512 * 1024 * 1024
    """IMPALA mode: bytes of uploads held at once across streams; past it RESOURCE_EXHAUSTED."""
    message_timeout_s: float = 120.0
    """After the hello, a stream whose next message has not arrived this long after the learner handed
    over its last answer is closed (DEADLINE_EXCEEDED), also while the answer waits to be taken in."""


class Inference(Protocol):
    """Where the streams' rows go (acting's ``InferenceLoop``): the transport knows only these two verbs."""

    def submit(self, rows: Rows) -> asyncio.Future[dict[str, np.ndarray]]:
        """The rows' outputs (``action``, ``invalid``), once their batch has run; InferenceError if it failed."""
        ...

    def detach(self, slots: np.ndarray, pending: asyncio.Future | None, release: Callable[[], None]) -> None:
        """After a stream ends: once ``pending`` is answered, forget the slots' state, then ``release``."""
        ...


class LocalStream:
    """Verbs: ``act`` on the stream's rows (answered by the learner's batched policy), ``close``."""

    def __init__(self, slots: np.ndarray, answer: Callable[[Rows], Awaitable[np.ndarray]], detach: Callable[[], None]) -> None:
        self.slots = slots
        self._answer, self._detach = answer, detach
        self._closed = False

    async def act(self, rows: Rows) -> np.ndarray:
        """``[K, *action_shape]`` actions for the rows of this stream's slots (int32 indices, or float32 for a
        Box); raises InferenceError if the policy failed or answered non-finite outputs for them."""
        return await self._answer(rows)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._detach()
