"""``aioseed actor --architecture impala``: the policy runs here, on this process's CPU.

Each group of K envs keeps one stream (``Learn``). Per unroll it: pulls the parameters when the
learner's version moved on (``GetParams``), steps its envs T times with the local policy, then
uploads the K finished unrolls (behaviour logits, the version of every step) and waits for the
learner to queue them. A full queue on the learner holds the answer back and so this actor, as in
SEED. Unrolls whose Accepted answer did not arrive when a stream broke are sent again after the
reconnect (at least once: the learner may have queued them already).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
import numpy as np
import structlog

from aioseed.action_space import clip
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.policy import ImpalaPolicy
from aioseed.clients.actor import Actor, ActorConfig, ActorError, raise_status, run_actor, send
from aioseed.clients.env_group import EnvGroup
from aioseed.impala_actor.params import Params, ParamsError, receive_params
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.server.acting.step import Acting, acting_for
from aioseed.spec import EnvSpec
from aioseed.types import Unroll

log = structlog.get_logger()
T = TypeVar("T")


class ImpalaActor(Actor):
    """SEED's actor (envs, streams, reconnects, refusals) with IMPALA's session: local policy, unroll uploads."""

    def __init__(self, config: ActorConfig) -> None:
        super().__init__(config)
        self.policy: ImpalaPolicy | None = None
        self.version = -1
        """The parameter version the policy holds (-1: none yet)."""
        self.uploads = 0
        """Unrolls the learner accepted."""
        self._accepted = [0] * len(self.groups)
        """Uploads the learner accepted, per group: a session's progress."""
        self._learner_agent: tuple[str, int] | None = None
        self._acting: list[Acting | None] = [None] * len(self.groups)
        self._pending: list[tuple[Unroll, list[float], list[int]] | None] = [None] * len(self.groups)
        # One thread runs the policy, its loads and the envs: a load never meets a step half way.
        self._thread = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="impala-actor")
        self._lock = asyncio.Lock()
        """Held while the policy is built or loaded."""

    async def _stop_work(self) -> None:
        """The step in progress finishes before the envs close; queued ones are dropped."""
        await asyncio.to_thread(self._thread.shutdown, wait=True, cancel_futures=True)

    async def _session(self, stub: pb_grpc.LearnerStub, index: int, group: EnvGroup) -> None:
        call, welcome = await self._connect(stub.Learn, index, group, self.slots[index])
        try:
            acting = await self._prepare(index, welcome)
            await self._pull(stub)  # the learner may have restarted meanwhile
            newest = self.version
            while True:
                if self._pending[index] is None:
                    if self._finished():
                        break
                    if newest != self.version:
                        await self._pull(stub)
                    self._pending[index] = await self._in_thread(collect, acting, group)
                newest = await self._upload(call, index)
            await call.done_writing()
            await call.code()  # the learner ends the stream: a clean end, not a cancel
        finally:
            # A failed pull leaves the Learn call open (grpc.aio keeps an active call alive): end it, or the
            # learner holds its slots until it notices.
            call.cancel()

    def _progress(self, index: int) -> int:
        return self._accepted[index]

    async def _prepare(self, index: int, welcome: pb.Welcome) -> Acting:
        """The policy (built from the first welcome's agent settings) and this group's acting."""
        agent = (welcome.agent_config, welcome.unroll_length)
        async with self._lock:  # the groups' first welcomes arrive together; one builds the policy
            if self._learner_agent is None:
                config = ImpalaConfig.from_dict(json.loads(welcome.agent_config))
                self.policy = await self._in_thread(build_policy, self.spec, config, self.config.policy_threads)
                self._learner_agent = agent
                log.info("policy_built", network=config.network, unroll_length=welcome.unroll_length)
            elif agent != self._learner_agent:
                raise ActorError("the learner now trains another network or unroll length; restart this actor")
        if self._acting[index] is None:
            # Local env indices: unrolls survive a reconnect that grants other slots.
            self._acting[index] = acting_for(self.policy, self.spec, welcome.unroll_length, lambda: self.version)
        return self._acting[index]

    async def _pull(self, stub: pb_grpc.LearnerStub) -> None:
        """The learner's newest parameters, unless another group fetched them meanwhile."""
        async with self._lock:
            request = pb.ParamsRequest(have_version=self.version)
            try:
                call = stub.GetParams(request, metadata=self._metadata, timeout=self.config.pull_timeout_s)
                params = await receive_params(call, self.policy.variable_specs())
            except ParamsError as exc:
                raise ActorError(str(exc)) from exc
            await self._in_thread(self._load, params)

    def _load(self, params: Params) -> None:
        """In the policy's thread: the weights and their version change together, between steps."""
        if params.arrays is not None:
            self.policy.load_policy_variables(params.arrays)
        self.version = params.version

    async def _upload(self, call: grpc.aio.StreamStreamCall, index: int) -> int:
        """Sends the group's finished unrolls; returns the learner's newest version once it queued them."""
        unrolls, returns, lengths = self._pending[index]
        await send(call, upload_message(unrolls, self.slots[index], returns, lengths))
        reply = await call.read()
        if reply is grpc.aio.EOF:
            await raise_status(call)
        if reply.WhichOneof("payload") != "accepted":
            raise ActorError(f"the learner answered an upload with {reply.WhichOneof('payload')}, not accepted")
        self._pending[index] = None
        self._accepted[index] += 1
        self.uploads += len(unrolls["slot"])
        return reply.accepted.params_version

    async def _in_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)


def build_policy(spec: EnvSpec, config: ImpalaConfig, threads: int) -> ImpalaPolicy:
    """The learner's network on this process's CPU (GPUs hidden: IMPALA's actors infer on CPUs)."""
    import tensorflow as tf

    try:
        tf.config.set_visible_devices([], "GPU")
        if threads:
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError as exc:  # TensorFlow already started in this process (an actor beside a learner)
        log.warning("policy_devices_unchanged", reason=str(exc))
    return ImpalaPolicy(spec, config)


def collect(acting: Acting, group: EnvGroup) -> tuple[Unroll, list[float], list[int]]:
    """Steps the group with the local policy until its envs' unrolls complete (they complete together: the
    group's envs step in lockstep); returns them (local env indices in ``slot``) and the returns and
    lengths of the episodes that ended meanwhile."""
    envs = np.arange(len(group), dtype=np.int32)
    returns: list[float] = []
    lengths: list[int] = []
    while True:
        result = acting.step(group.rows(envs))
        if result.invalid.any():
            raise ActorError("the policy's outputs are non-finite: the learner's parameters are broken")
        group.step(clip(group.spec.action_space, result.actions)[0])
        returns += result.boundaries.episode_returns.tolist()
        lengths += result.boundaries.episode_lengths.tolist()
        if result.unrolls is not None:
            return result.unrolls, returns, lengths


def upload_message(unrolls: Unroll, slots: np.ndarray, returns: list[float], lengths: list[int]) -> pb.ActorMessage:
    """``unrolls`` of local env indices as an Unrolls message for a stream that holds ``slots``."""
    columns = []
    for name, column in unrolls.items():
        if name != "slot":
            little = column.astype(column.dtype.newbyteorder("<"), copy=False)
            columns.append(pb.Column(name=name, data=np.ascontiguousarray(little).tobytes(), dtype=little.dtype.str))
    return pb.ActorMessage(
        unrolls=pb.Unrolls(
            slots=slots[unrolls["slot"]].astype("<i4").tobytes(),
            columns=columns,
            episode_returns=np.asarray(returns, "<f8").tobytes(),
            episode_lengths=np.asarray(lengths, "<i8").tobytes(),
        )
    )


async def run_impala_actor(config: ActorConfig) -> int:
    """``aioseed actor --architecture impala``: runs until done or SIGINT/SIGTERM; returns the exit code."""
    return await run_actor(config, ImpalaActor)
