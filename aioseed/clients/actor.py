"""The actor client: steps environments and streams every observation to the learner.

One process holds ``num_envs`` environments split into groups of
``envs_per_message``; each group has its own bidirectional stream on a shared
channel. Streams reconnect with exponential backoff and full jitter, keep their
run_ids and ask for their previous slots back. Errors that retrying cannot fix
(bad spec, bad token, invalid messages) stop the actor with a non-zero exit.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import grpc
import numpy as np
import structlog
import tenacity

from aioseed.action_space import decode
from aioseed.clients.config import ActorConfig
from aioseed.clients.env_group import EnvGroup, env_groups
from aioseed.proto import SERVICE_NAME
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc

log = structlog.get_logger()

FATAL_CODES = frozenset(
    {
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)


MAX_RECEIVE_BYTES = 64 * 1024 * 1024
"""Largest message an actor accepts (the learner's default max_message_bytes)."""


class ActorError(RuntimeError):
    """The learner refused this actor for a reason that retrying cannot fix."""


def describe_reply(reply: pb.LearnerMessage) -> str:
    kind = reply.WhichOneof("payload")
    return f"a welcome of {len(reply.welcome.slots)} slots" if kind == "welcome" else f"a {kind or 'empty'} message"


def transient(exc: BaseException) -> bool:
    return isinstance(exc, grpc.aio.AioRpcError) and exc.code() not in FATAL_CODES


class StreamLost(Exception):
    """The learner closed the stream without a status; reconnect."""


@dataclasses.dataclass(frozen=True)
class Attempt:
    """The part of tenacity's retry state its wait strategies read: the number of the attempt (from 1)."""

    attempt_number: int


class Actor:
    def __init__(self, config: ActorConfig) -> None:
        self.config = config
        self.name = config.name or f"{socket.gethostname()}:{os.getpid()}"
        token = config.learner_token
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.spec, self.run_ids, self.groups = env_groups(config)
        self.connects = 0
        self.slots: list[np.ndarray] = [np.zeros(0, np.int32) for _ in self.groups]
        """Each group's env slots, as the learner's latest welcome granted them."""

    @property
    def steps(self) -> int:
        return sum(group.steps for group in self.groups)

    async def run(self) -> None:
        """Runs every group's stream until ``max_steps`` or cancellation."""
        try:
            async with open_channel(self.config) as channel:
                stub = pb_grpc.LearnerStub(channel)
                async with asyncio.TaskGroup() as group_tasks:
                    for index, group in enumerate(self.groups):
                        group_tasks.create_task(self._run_group(stub, index, group))
        finally:
            await self._stop_work()
            for group in self.groups:
                group.close()
        log.info("actor_done", steps=self.steps)

    async def _stop_work(self) -> None:
        """Before the envs close: stop whatever else steps them (SEED's actor steps them on the loop only)."""

    async def _run_group(self, stub: pb_grpc.LearnerStub, index: int, group: EnvGroup) -> None:
        """Sessions of one group's stream until done; a lost stream reconnects, a refusal stops the actor.

        Sessions lost one after another without progress (a learner that accepts the hello, then fails
        the next call) wait longer each time, with full jitter, as failed connects do: a failing learner
        is never hammered with reconnects."""
        wait = self._backoff()
        lost = 0
        while not self._finished():
            progress = self._progress(index)
            try:
                await self._session(stub, index, group)
            except (grpc.aio.AioRpcError, StreamLost) as exc:
                if isinstance(exc, grpc.aio.AioRpcError) and not transient(exc):
                    raise ActorError(f"learner refused the actor: {exc.code().name}: {exc.details()}") from exc
                lost = 1 if self._progress(index) > progress else lost + 1
                delay = wait(Attempt(lost))
                log.warning("stream_lost", group=index, error=describe(exc), retry_in_s=round(delay, 3))
                await asyncio.sleep(delay)

    def _progress(self, index: int) -> int:
        """What a session of group ``index`` has achieved so far (SEED: env steps the learner answered)."""
        return self.groups[index].steps

    def _backoff(self) -> tenacity.wait.wait_base:
        return tenacity.wait_random_exponential(multiplier=self.config.backoff_initial_s, max=self.config.backoff_max_s)

    async def _connect(
        self, rpc: Callable[..., grpc.aio.StreamStreamCall], index: int, group: EnvGroup, previous: np.ndarray
    ) -> tuple[grpc.aio.StreamStreamCall, pb.Welcome]:
        """Opens the stream (``rpc``: the stub's Act, or IMPALA mode's Learn) and says hello, retrying
        transient failures with backoff; returns the call and the learner's welcome."""
        retrying = tenacity.AsyncRetrying(
            wait=self._backoff(),
            retry=tenacity.retry_if_exception(lambda e: transient(e) or isinstance(e, StreamLost)),
            before_sleep=lambda state: log.info(
                "reconnecting", group=index, attempt=state.attempt_number, error=describe(state.outcome.exception())
            ),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                call = rpc(metadata=self._metadata)
                await call.write(
                    pb.ActorMessage(
                        hello=pb.Hello(
                            spec=self.spec.to_proto(),
                            num_envs=len(group),
                            run_ids=group.run_ids.tolist(),
                            previous_slots=previous.tolist(),
                            actor_name=f"{self.name}/{index}",
                            evaluation=self.config.evaluation,
                        )
                    )
                )
                reply = await call.read()
                if reply is grpc.aio.EOF:
                    await raise_status(call)
                if reply.WhichOneof("payload") != "welcome" or len(reply.welcome.slots) != len(group):
                    raise ActorError(
                        f"the learner answered the hello of {len(group)} envs with {describe_reply(reply)}, not a welcome of as many slots"
                    )
                self.connects += 1
                self.slots[index] = np.array(reply.welcome.slots, np.int32)
                return call, reply.welcome
        raise AssertionError("unreachable")

    async def _session(self, stub: pb_grpc.LearnerStub, index: int, group: EnvGroup) -> None:
        """One connection of a group: handshake, then a Steps message and its Actions per env step."""
        call, _ = await self._connect(stub.Act, index, group, self.slots[index])
        try:
            await self._stream(call, group, self.slots[index])
        finally:
            call.cancel()  # after a failure, the learner must not keep the stream (a no-op once the call ended)

    async def _stream(self, call: grpc.aio.StreamStreamCall, group: EnvGroup, slots: np.ndarray) -> None:
        while not self._finished():
            await send(call, group.message(slots))
            reply = await call.read()
            if reply is grpc.aio.EOF:
                await raise_status(call)
            try:
                actions = decode(self.spec.action_space, reply.actions.actions, len(slots))
            except ValueError as exc:
                raise ActorError(f"the learner sent unusable actions: {exc}") from None
            group.step(actions)
        await call.done_writing()
        await call.code()  # the learner ends the stream: a clean end, not a cancel

    def _finished(self) -> bool:
        return self.config.max_steps is not None and self.steps >= self.config.max_steps


PULL_RETRIES = json.dumps({
    "methodConfig": [{
        "name": [{"service": SERVICE_NAME, "method": "GetParams"}],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": "0.05s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["RESOURCE_EXHAUSTED", "UNAVAILABLE"],
        },
    }]
})  # fmt: skip
"""gRPC's own retries for IMPALA mode's parameter pull: a pull the learner turns away while it is busy
(all download slots taken) is asked again after a jittered backoff (gRPC retries a call only until its
first answer arrives), before the actor gives up on its session."""


def open_channel(config: ActorConfig) -> grpc.aio.Channel:
    """A channel to ``config.learner``: plaintext, or TLS verified against ``config.tls_ca``."""
    # IMPALA mode's parameter chunks may exceed gRPC's default 4 MiB; the learner's limit still applies.
    options: list[tuple[str, Any]] = [
        ("grpc.max_receive_message_length", MAX_RECEIVE_BYTES), ("grpc.service_config", PULL_RETRIES),
        # Without pings a learner gone silent (power loss, a partition) leaves a read waiting forever.
        ("grpc.keepalive_time_ms", round(config.keepalive_s * 1000)),
        ("grpc.keepalive_timeout_ms", round(config.keepalive_timeout_s * 1000)),
        ("grpc.http2.ping_timeout_ms", round(config.keepalive_timeout_s * 1000)),
        ("grpc.keepalive_permit_without_calls", 1), ("grpc.http2.max_pings_without_data", 0),
    ]
    if config.tls_ca is None:
        return grpc.aio.insecure_channel(config.learner, options=options)
    credentials = grpc.ssl_channel_credentials(root_certificates=config.tls_ca.read_bytes())
    if config.tls_server_name:
        options.append(("grpc.ssl_target_name_override", config.tls_server_name))
    return grpc.aio.secure_channel(config.learner, credentials, options=options)


async def send(call: grpc.aio.StreamStreamCall, message: Any) -> None:
    """Writes ``message``; a call that ended meanwhile (the learner stopped or dropped the stream while the actor
    was busy) raises its status, as a read would: grpc.aio raises InvalidStateError."""
    try:
        await call.write(message)
    except asyncio.InvalidStateError:
        await raise_status(call)


async def raise_status(call: grpc.aio.StreamStreamCall) -> None:
    code = await call.code()
    if code != grpc.StatusCode.OK:
        raise grpc.aio.AioRpcError(code, await call.initial_metadata(), await call.trailing_metadata(), await call.details())
    raise StreamLost("the learner closed the stream")


def describe(exc: BaseException | None) -> str:
    if isinstance(exc, grpc.aio.AioRpcError):
        return f"{exc.code().name}: {exc.details()}"
    return repr(exc)


class Runnable(Protocol):
    """An actor process's main object: SEED's ``Actor`` or IMPALA mode's."""

    @property
    def steps(self) -> int: ...

    def run(self) -> Awaitable[None]: ...


async def run_actor(config: ActorConfig, make: Callable[[ActorConfig], Runnable] = Actor) -> int:
    """Runs an actor (``make``: SEED's by default) until done or SIGINT/SIGTERM; returns the process exit code."""
    actor = make(config)
    log.info("actor_starting", learner=config.learner, env=config.env, envs=config.num_envs, architecture=config.architecture)
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    return await exit_code(actor)


async def exit_code(actor: Runnable) -> int:
    """Runs ``actor`` until done or cancelled: 0, or 2 when the learner refused it."""
    try:
        await actor.run()
    except asyncio.CancelledError:
        log.info("actor_stopped", steps=actor.steps)
    except ExceptionGroup as group:
        refused = group.subgroup(ActorError)
        if refused is None:
            raise
        log.error("actor_refused", error=str(refused.exceptions[0]))
        return 2
    return 0
