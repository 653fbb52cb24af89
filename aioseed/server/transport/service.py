"""The grpc.aio servicer. SEED mode's ``Act``: handshake, then one Actions answer per Steps message.
IMPALA mode's ``Learn``: the same handshake, then one Accepted answer per Unrolls upload; and
``GetParams``, the versioned parameter pulls. Each mode refuses the other's calls."""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, NoReturn

import grpc
import numpy as np
import structlog

from aioseed.action_space import clip, encode
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.server.batching.batcher import InferenceError
from aioseed.server.transport.params_gate import ParamsGate, Refused
from aioseed.server.transport.protocol import (
    ProtocolError,
    RowBounds,
    RowParser,
    SpecMismatch,
    check_hello,
    checked,
    parse_hello,
    shorten,
)
from aioseed.server.transport.refusals import Refusals
from aioseed.server.transport.slots import SlotsExhausted, SlotTable
from aioseed.server.transport.streams import Inference, LocalStream, StreamInfo, StreamLimits
from aioseed.server.transport.uploads import Uploads
from aioseed.spec import EnvSpec
from aioseed.types import Rows

log = structlog.get_logger()

IMPALA_LEARNER = (
    "this learner runs in IMPALA mode (--architecture impala): its actors run the policy themselves; "
    "start them with aioseed actor --architecture impala"
)
SEED_LEARNER = (
    "this learner runs in SEED mode: parameters never leave it and it runs the policy for its actors; "
    "start actors without --architecture impala, or the learner with --architecture impala"
)


class LearnerService(pb_grpc.LearnerServicer):
    def __init__(
        self,
        spec: EnvSpec,
        slots: SlotTable,
        inference: Inference,
        limits: StreamLimits,
        on_connected_rows: Callable[[int], None],
        on_latency: Callable[[float], None] = lambda seconds: None,
        bounds: RowBounds = RowBounds(),
        uploads: Uploads | None = None,
        serving: bool = False,
    ) -> None:
        """``uploads``: IMPALA mode (actors run the policy and upload unrolls; ``Act`` is refused), else
        SEED mode (``Learn`` and ``GetParams`` are refused). ``serving``: a policy server (aioseed serve):
        every stream's rows are evaluation rows, acted on and never stored."""
        self._spec = spec
        self._uploads = uploads
        self._serving = serving
        self.refusals = Refusals()
        self._upload_bytes = 0
        """IMPALA mode: bytes of the uploads being parsed or waiting for room in the unroll queue."""
        self.params_gate = ParamsGate(limits.params_calls, limits.params_calls_per_peer, limits.params_stall_s)
        self._slots = slots
        self._inference = inference
        self._limits = limits
        self._bounds = bounds
        self._on_connected_rows = on_connected_rows
        self._on_latency = on_latency
        self.streams: dict[int, StreamInfo] = {}
        self._envs_by_peer: collections.Counter[str] = collections.Counter()
        self._next_stream = 0
        self.handshaking = 0
        """Streams waiting for their hello (they count against ``limits.streams``)."""
        self.clipped_action_rows = 0
        """Rows whose Box action was clipped into the box before it was sent."""

    def describe_streams(self) -> list[dict[str, Any]]:
        """The connected streams, for the console and /api/actors."""
        return [info.describe(stream_id) for stream_id, info in sorted(self.streams.items())]

    @property
    def params_downloads(self) -> int:
        """IMPALA mode: parameter downloads in progress."""
        return self.params_gate.active + self.params_gate.stalled

    @property
    def connected_envs(self) -> int:
        return self._slots.connected

    @property
    def largest_stream(self) -> int:
        """Env rows of the connected stream with the most (its rows per message)."""
        return max((len(info.slots) for info in self.streams.values()), default=0)

    def metrics(self) -> dict[str, float]:
        """Gauges for the metrics snapshot; also moves each stream's steps_per_s on (one call per interval)."""
        now = time.time()
        for info in self.streams.values():
            info.update_rate(now)
        return {
            "actors/streams": float(len(self.streams)),
            "actors/streams_unread": float(sum(info.unread for info in self.streams.values())),
            "actors/handshaking": float(self.handshaking),
            "actors/envs": float(self.connected_envs),
            "actors/reserved_slots": float(self._slots.reserved),
            "actors/params_downloads": float(self.params_downloads),
            "actors/params_stalled": float(self.params_gate.stalled),
            "actors/params_evicted": float(self.params_gate.evicted),
            "actors/upload_bytes_held": float(self._upload_bytes),
            "actors/clipped_action_rows": float(self.clipped_action_rows),
            **self.refusals.metrics(),
            **({} if self._uploads is None else self._uploads.metrics()),
        }

    def disconnect(self, stream_id: int) -> None:
        """Ends one stream; its slots are kept for the grace period, and the actor may reconnect."""
        info = self.streams.get(stream_id)
        if info is None:
            raise KeyError(f"no connected stream {stream_id}")
        log.info("stream_disconnected", stream=stream_id, actor=info.actor)
        if info.task is not None:
            info.task.cancel()

    async def Act(self, request_iterator: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> None:
        """Every refusal carries a precise status and a detail of at most a few hundred bytes."""
        if self._uploads is not None:
            await self._abort(context, grpc.StatusCode.FAILED_PRECONDITION, IMPALA_LEARNER)
        messages = request_iterator  # not aiter(): gRPC would make its reader now, unawaited if the stream is refused first
        handshake = await self._handshake(messages, context)
        if handshake is None:
            return
        hello, slots = handshake
        evaluation = hello.evaluation or self._serving
        stream_id, info = self._attach(context.peer(), hello.actor_name, slots, evaluation)
        parser = RowParser(  # a hello with previous slots: its envs play on (EnvTable)
            self._spec, slots, np.asarray(hello.run_ids, np.uint64), evaluation, self._bounds, reconnected=bool(hello.previous_slots)
        )
        what = f"a Steps message of {len(slots)} rows"
        try:
            refusal = None
            try:
                await self._send(context, pb.LearnerMessage(welcome=pb.Welcome(slots=slots.tolist())), info)
                async for message, _ in checked(messages, parser.max_bytes, what):
                    info.awaiting_since = None
                    rows = parser.parse(message)
                    try:
                        actions = await self._answer(info, rows)
                    except InferenceError as exc:
                        await self._abort(context, grpc.StatusCode.INTERNAL, str(exc), stream=stream_id, actor=info.actor)
                    answer = pb.Actions(actions=encode(self._spec.action_space, actions))
                    await self._send(context, pb.LearnerMessage(actions=answer), info)
            except ProtocolError as exc:
                refusal = str(exc)
            except asyncio.CancelledError:
                await self._abort_if_expired(context, stream_id, info)
            if refusal is not None:
                message = rows = messages = request_iterator = None  # see Learn
                await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, refusal, stream=stream_id, actor=info.actor)
        finally:
            self._detach(stream_id)

    async def Learn(self, request_iterator: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> None:
        """IMPALA mode: the handshake of ``Act``, then one Accepted answer per Unrolls message, sent once
        its unrolls are queued (a full queue holds the answer back, and so the actor)."""
        uploads = self._uploads
        if uploads is None:
            await self._abort(context, grpc.StatusCode.FAILED_PRECONDITION, SEED_LEARNER)
        messages = request_iterator  # not aiter(): gRPC would make its reader now, unawaited if the stream is refused first
        handshake = await self._handshake(messages, context, evaluation=False)
        if handshake is None:
            return
        hello, slots = handshake
        stream_id, info = self._attach(context.peer(), hello.actor_name, slots, False)
        parser = uploads.parser(slots)
        what = f"an upload of {len(slots)} unrolls"
        try:
            refusal: tuple[grpc.StatusCode, str] | None = None
            try:
                await self._send(context, pb.LearnerMessage(welcome=uploads.welcome(slots, hello.run_ids, bool(hello.previous_slots))), info)
                async for message, size in checked(messages, parser.max_bytes, what):
                    info.awaiting_since = None
                    if self._upload_bytes + size > self._limits.upload_bytes:
                        held, limit = self._upload_bytes, self._limits.upload_bytes
                        refusal = (grpc.StatusCode.RESOURCE_EXHAUSTED, f"the learner already holds {held} bytes of uploads; the limit is {limit}")
                        break
                    self._upload_bytes += size
                    try:
                        upload = await asyncio.to_thread(parser.parse, message, uploads.version)  # ~50 ms for 59 MB
                        await uploads.receive(upload, size)
                    finally:
                        self._upload_bytes -= size
                    info.last_seen = time.time()
                    info.steps += upload.env_steps
                    message = upload = None  # queued: the stream may idle now without holding them
                    accepted = pb.Accepted(params_version=uploads.version)
                    await self._send(context, pb.LearnerMessage(accepted=accepted), info)
            except ProtocolError as exc:
                refusal = (grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            except asyncio.CancelledError:
                await self._abort_if_expired(context, stream_id, info)
            if refusal is not None:
                # Aborted outside the except clause and with the message dropped: gRPC keeps the abort's
                # exception in a reference cycle, and its traceback (this frame) and context (the refusal's
                # traceback) would keep the refused bytes alive until Python's cyclic collector runs, which
                # a flood of large uploads outpaces (the learner's RSS grew by GBs: bench impala-hostile).
                message = upload = messages = request_iterator = None  # gRPC's reader holds the last bytes read
                await self._abort(context, *refusal, stream=stream_id, actor=info.actor)
        finally:
            self._detach(stream_id)

    async def GetParams(self, request: pb.ParamsRequest | ProtocolError, context: grpc.aio.ServicerContext) -> None:
        """IMPALA mode: the newest parameters, or only their version when the actor holds them. Each
        connection holds at most its share of the downloads, a stalled download makes room for moving
        ones (``ParamsGate``), and a download must be taken in within the send timeout, so a client
        that stops reading cannot starve the others."""
        uploads, limits, peer = self._uploads, self._limits, context.peer()
        if uploads is None:
            await self._abort(context, grpc.StatusCode.FAILED_PRECONDITION, SEED_LEARNER)
        if isinstance(request, ProtocolError):  # see endpoint.params_request
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(request))
        if request.have_version < -1:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"have_version must be >= -1, got {request.have_version}")
        try:
            download = self.params_gate.admit(peer)
        except Refused as exc:
            await self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        context.add_done_callback(lambda _: self.params_gate.release(download))  # also when the actor cancels mid-download
        try:
            async with asyncio.timeout(limits.params_timeout_s):
                for chunk in uploads.params(request.have_version):
                    await self.params_gate.send(download, context.write(chunk))
        except LookupError as exc:
            await self._abort(context, grpc.StatusCode.UNAVAILABLE, str(exc))
        except TimeoutError:
            # The send flow control held back was withdrawn, and no status can follow it: the call is
            # cancelled, which frees its slot (the client sees no status; its own deadline ends its wait).
            detail = f"a parameter download was not taken in within {limits.params_timeout_s:g} s"
            self.refusals.record(grpc.StatusCode.DEADLINE_EXCEEDED.name, peer, detail)
            raise asyncio.CancelledError from None

    async def _abort(self, context: grpc.aio.ServicerContext, code: grpc.StatusCode, detail: str, **fields: object) -> NoReturn:
        """Ends the call with ``code``, counted and logged at a bounded rate; the detail is cut so it always
        fits gRPC's metadata limit."""
        detail = shorten(detail)
        self.refusals.record(code.name, context.peer(), detail, **fields)
        await context.abort(code, detail)

    async def expire_idle(self, every_s: float = 1.0) -> None:
        """A task: closes the streams whose next message is overdue (``limits.message_timeout_s`` after the
        learner's last answer). Time the learner itself takes to answer (back-pressure, a pause) never counts.
        Also collects the reference cycles refused calls leave (``Refusals.collect_cycles``)."""
        limit = self._limits.message_timeout_s
        while True:
            await asyncio.sleep(every_s)
            now = time.monotonic()
            for info in self.streams.values():
                if info.awaiting_since is not None and now - info.awaiting_since > limit and info.task is not None:
                    info.expired = True
                    info.task.cancel()
            self.refusals.collect_cycles()

    @staticmethod
    async def _send(context: grpc.aio.ServicerContext, message: pb.LearnerMessage, info: StreamInfo) -> None:
        """Sends one answer. The message timeout starts as it is handed over: taking it in (flow control holds
        it back while the actor does not read) is the actor's time, as is sending its next message."""
        info.awaiting_since = time.monotonic()
        info.sending = True
        await context.write(message)
        info.sending = False

    async def _abort_if_expired(self, context: grpc.aio.ServicerContext, stream_id: int, info: StreamInfo) -> None:
        """In a stream cancelled while it waited: DEADLINE_EXCEEDED if ``expire_idle`` ended it, else the
        cancellation goes on. One that had not taken its answer in is counted as DEADLINE_EXCEEDED and held, still
        counted, until gRPC ends the call (``StreamInfo.unread``)."""
        if not info.expired:
            raise asyncio.CancelledError
        if info.sending:
            detail = f"an answer was not taken in within {self._limits.message_timeout_s:g} s"
            self.refusals.record(grpc.StatusCode.DEADLINE_EXCEEDED.name, context.peer(), detail, stream=stream_id, actor=info.actor)
            # Held, and counted against the limits, until gRPC cancels the call as its client or connection ends it.
            info.awaiting_since, info.unread = None, True
            await asyncio.get_running_loop().create_future()
        detail = f"no message within {self._limits.message_timeout_s:g} s of the learner's answer"
        await self._abort(context, grpc.StatusCode.DEADLINE_EXCEEDED, detail, stream=stream_id, actor=info.actor)

    async def _handshake(
        self, messages: AsyncIterator[bytes], context: grpc.aio.ServicerContext, evaluation: bool = True
    ) -> tuple[pb.Hello, np.ndarray] | None:
        """The stream's hello, checked against the spec and the limits, and the env slots it was granted
        (None if the stream ended first); aborts the call otherwise. ``evaluation``: whether evaluation envs are served."""
        limits = self._limits
        if len(self.streams) + self.handshaking >= limits.streams:
            await self._abort(
                context, grpc.StatusCode.RESOURCE_EXHAUSTED, f"the learner already serves its maximum of {limits.streams} streams"
            )
        self.handshaking += 1
        try:
            async with asyncio.timeout(limits.hello_timeout_s):
                first = parse_hello(await anext(messages), limits.envs_per_stream)
        except StopAsyncIteration:  # the actor went away before its hello
            return None
        except TimeoutError:
            await self._abort(context, grpc.StatusCode.DEADLINE_EXCEEDED, f"no hello within {limits.hello_timeout_s:g} s")
        except ProtocolError as exc:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        finally:
            self.handshaking -= 1
        if first.WhichOneof("payload") != "hello":
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "the first message must be a hello")
        hello, peer = first.hello, context.peer()
        try:
            check_hello(hello, self._spec, limits.envs_per_stream, limits.slots)
        except SpecMismatch as exc:
            await self._abort(context, grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except ProtocolError as exc:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        if hello.evaluation and not evaluation:
            await self._abort(context, grpc.StatusCode.INVALID_ARGUMENT, "IMPALA-mode actors cannot run evaluation envs; use aioseed eval")
        held = self._envs_by_peer[peer]
        if held + hello.num_envs > limits.envs_per_actor:
            await self._abort(
                context,
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"actor {peer} holds {held} envs and asks for {hello.num_envs} more; "
                f"the maximum per actor is {limits.envs_per_actor}",
            )
        try:
            slots = self._slots.acquire(list(hello.run_ids), list(hello.previous_slots))
        except SlotsExhausted as exc:
            await self._abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, str(exc))
        return hello, slots

    async def _answer(self, info: StreamInfo, rows: Rows) -> np.ndarray:
        """One message's rows -> their actions, through the batcher; raises InferenceError when the policy
        failed on them or its outputs for them are non-finite (no action is sent then)."""
        submitted = time.perf_counter()
        info.pending = self._inference.submit(rows)
        outputs = await asyncio.shield(info.pending)
        if outputs["invalid"].any():
            raise InferenceError(invalid_outputs(outputs["invalid"]))
        self._on_latency(time.perf_counter() - submitted)
        info.last_seen = time.time()
        info.steps += len(info.slots)
        actions, clipped = clip(self._spec.action_space, outputs["action"])
        self.clipped_action_rows += clipped
        return actions

    def _attach(self, peer: str, actor: str, slots: np.ndarray, evaluation: bool) -> tuple[int, StreamInfo]:
        """Registers a stream that holds ``slots``: the console's list, the per-peer count, the batcher's."""
        stream_id = self._next_stream
        self._next_stream += 1
        info = StreamInfo(peer=peer, actor=shorten(actor, 80), slots=slots, task=asyncio.current_task())
        self.streams[stream_id] = info
        self._envs_by_peer[peer] += len(slots)
        self._on_connected_rows(self._slots.connected)
        log.info("stream_connected", stream=stream_id, actor=info.actor, peer=peer, slots=len(slots), evaluation=evaluation)
        return stream_id, info

    def _detach(self, stream_id: int) -> None:
        """After a stream ends: once its last rows are answered, its slots are released (kept for the grace period)."""
        info = self.streams.pop(stream_id)
        peer, slots = info.peer, info.slots
        self._envs_by_peer[peer] -= len(slots)
        if not self._envs_by_peer[peer]:
            del self._envs_by_peer[peer]
        log.info("stream_closed", stream=stream_id, actor=info.actor, steps=info.steps)

        def release() -> None:
            self._slots.release(slots.tolist())
            self._on_connected_rows(self._slots.connected)

        self._inference.detach(slots, info.pending, release)

    def open_local(self, spec: EnvSpec, run_ids: np.ndarray, actor: str, evaluation: bool = False, previous: Any = ()) -> LocalStream:
        """An in-process stream (Sebulba's actor threads): slots (``previous`` ones back, as a Hello's), bookkeeping
        and batching as for a gRPC stream, but rows go to the batcher as arrays, with no serialization and no network."""
        if spec != self._spec:
            raise SpecMismatch(f"the in-process actor steps {spec}; the learner serves {self._spec}")
        slots = self._slots.acquire([int(r) for r in run_ids], [int(s) for s in previous])
        stream_id, info = self._attach("in-process", actor, slots, evaluation)
        reconnected = np.full(len(slots), len(previous) > 0)  # a first open's envs have just reset
        return LocalStream(slots, lambda rows: self._answer(info, {**rows, "reconnected": reconnected}), lambda: self._detach(stream_id))


def invalid_outputs(invalid: np.ndarray) -> str:
    count = int(invalid.sum())
    return f"the policy's outputs are non-finite (or its action out of range) for {count} of this stream's rows; no actions were sent (check the learner's weights)"

