"""The grpc.aio servicer: handshake, then one Actions answer per Steps message."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time
from collections.abc import AsyncIterator, Callable

import grpc
import numpy as np
import structlog

from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.server.inference import InferenceError, InferenceLoop
from aioseed.server.protocol import ProtocolError, RowParser, SpecMismatch, check_hello
from aioseed.server.slots import SlotsExhausted, SlotTable
from aioseed.spec import EnvSpec

log = structlog.get_logger()


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
    _counted: tuple[float, int] = (0.0, 0)

    def update_rate(self, now: float) -> None:
        """Called once per metrics interval."""
        then, steps = self._counted
        if then:
            self.steps_per_s = (self.steps - steps) / max(now - then, 1e-9)
        self._counted = (now, self.steps)


@dataclasses.dataclass(frozen=True)
class StreamLimits:
    """Past any of these a handshake gets RESOURCE_EXHAUSTED; streams already connected carry on."""

    streams: int
    """Concurrent streams."""
    envs_per_stream: int
    """K one hello may declare (beyond it the hello is INVALID_ARGUMENT)."""
    envs_per_actor: int
    """Env slots held at once by the streams of one connection (one actor process)."""


class LearnerService(pb_grpc.LearnerServicer):
    def __init__(
        self,
        spec: EnvSpec,
        slots: SlotTable,
        inference: InferenceLoop,
        limits: StreamLimits,
        on_connected_rows: Callable[[int], None],
        on_latency: Callable[[float], None] = lambda seconds: None,
    ) -> None:
        self._spec = spec
        self._slots = slots
        self._inference = inference
        self._limits = limits
        self._on_connected_rows = on_connected_rows
        self._on_latency = on_latency
        self.streams: dict[int, StreamInfo] = {}
        self._envs_by_peer: collections.Counter[str] = collections.Counter()
        self._next_stream = 0

    def disconnect(self, stream_id: int) -> None:
        """Ends one stream; its slots are kept for the grace period, and the actor may reconnect."""
        info = self.streams.get(stream_id)
        if info is None:
            raise KeyError(f"no connected stream {stream_id}")
        log.info("stream_disconnected", stream=stream_id, actor=info.actor)
        if info.task is not None:
            info.task.cancel()

    async def Act(
        self, request_iterator: AsyncIterator[pb.ActorMessage], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[pb.LearnerMessage]:
        try:
            first = await anext(aiter(request_iterator))
        except StopAsyncIteration:
            return
        if first.WhichOneof("payload") != "hello":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first message must be a hello")
        hello = first.hello
        limits, peer = self._limits, context.peer()
        if len(self.streams) >= limits.streams:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED, f"the learner already serves its maximum of {limits.streams} streams"
            )
        try:
            check_hello(hello, self._spec, limits.envs_per_stream)
        except SpecMismatch as exc:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except ProtocolError as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        held = self._envs_by_peer[peer]
        if held + hello.num_envs > limits.envs_per_actor:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"actor {peer} holds {held} envs and asks for {hello.num_envs} more; "
                f"the maximum per actor is {limits.envs_per_actor}",
            )
        try:
            slots = self._slots.acquire(list(hello.run_ids), list(hello.previous_slots))
        except SlotsExhausted as exc:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))

        stream_id = self._next_stream
        self._next_stream += 1
        info = StreamInfo(peer=peer, actor=hello.actor_name, slots=slots, task=asyncio.current_task())
        self.streams[stream_id] = info
        self._envs_by_peer[peer] += len(slots)
        self._on_connected_rows(self._slots.connected)
        log.info(
            "stream_connected",
            stream=stream_id,
            actor=info.actor,
            peer=info.peer,
            slots=len(slots),
            evaluation=hello.evaluation,
        )
        parser = RowParser(self._spec, slots, hello.evaluation)
        pending: asyncio.Future | None = None
        try:
            yield pb.LearnerMessage(welcome=pb.Welcome(slots=slots.tolist()))
            async for message in request_iterator:
                try:
                    rows = parser.parse(message)
                except ProtocolError as exc:
                    log.warning("bad_message", stream=stream_id, actor=info.actor, error=str(exc))
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
                submitted = time.perf_counter()
                pending = self._inference.submit(rows)
                try:
                    outputs = await asyncio.shield(pending)
                except InferenceError as exc:
                    await context.abort(grpc.StatusCode.INTERNAL, str(exc))
                self._on_latency(time.perf_counter() - submitted)
                info.last_seen = time.time()
                info.steps += len(slots)
                yield pb.LearnerMessage(actions=pb.Actions(actions=outputs["action"].astype("<i4").tobytes()))
        finally:
            del self.streams[stream_id]
            self._envs_by_peer[peer] -= len(slots)
            if not self._envs_by_peer[peer]:
                del self._envs_by_peer[peer]
            log.info("stream_closed", stream=stream_id, actor=info.actor, steps=info.steps)

            def release() -> None:
                self._slots.release(slots.tolist())
                self._on_connected_rows(self._slots.connected)

            self._inference.detach(slots, pending, release)
