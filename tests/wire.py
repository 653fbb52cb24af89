"""Hand-built protocol messages for tests that speak to the learner directly."""

from __future__ import annotations

import grpc
import numpy as np

from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc
from aioseed.spec import EnvSpec

CARTPOLE = EnvSpec(observation_shape=(4,), observation_dtype="float32", action_space=2)


def hello(k: int, spec: EnvSpec = CARTPOLE, run_id_base: int = 1000, previous: list[int] | None = None) -> pb.ActorMessage:
    return pb.ActorMessage(
        hello=pb.Hello(
            spec=spec.to_proto(),
            num_envs=k,
            run_ids=[run_id_base + i for i in range(k)],
            previous_slots=previous or [],
            actor_name="test",
        )
    )


def steps(
    slots: np.ndarray,
    run_id_base: int = 1000,
    rewards: np.ndarray | None = None,
    observations: np.ndarray | None = None,
    flags: np.ndarray | None = None,
) -> pb.ActorMessage:
    k = len(slots)
    if observations is None:
        observations = np.random.default_rng(0).normal(size=(k, 4)).astype(np.float32) * 0.05
    return pb.ActorMessage(
        steps=pb.Steps(
            slots=np.asarray(slots, "<i4").tobytes(),
            run_ids=np.arange(run_id_base, run_id_base + k, dtype="<u8").tobytes(),
            rewards=(np.ones(k, "<f4") if rewards is None else np.asarray(rewards, "<f4")).tobytes(),
            flags=(np.zeros(k, np.uint8) if flags is None else np.asarray(flags, np.uint8)).tobytes(),
            observations=observations.tobytes(),
        )
    )


class Stream:
    """One bidirectional stream (``rpc``: Act, or IMPALA mode's Learn): handshake, then ``step`` round trips."""

    def __init__(self, channel: grpc.aio.Channel, metadata: tuple = (), rpc: str = "Act") -> None:
        self.call = getattr(pb_grpc.LearnerStub(channel), rpc)(metadata=metadata)
        self.slots = np.zeros(0, np.int32)

    async def handshake(self, message: pb.ActorMessage) -> np.ndarray:
        self.welcome = (await self.send(message)).welcome
        self.slots = np.array(self.welcome.slots, np.int32)
        return self.slots

    async def step(self, message: pb.ActorMessage) -> np.ndarray:
        return np.frombuffer((await self.send(message)).actions.actions, "<i4")

    async def send(self, message: pb.ActorMessage) -> pb.LearnerMessage:
        """One message and its answer; the stream's status as an AioRpcError if it ended instead."""
        await self.call.write(message)
        reply = await self.call.read()
        if reply is grpc.aio.EOF:
            await self.raise_status()
        return reply

    async def raise_status(self) -> None:
        code = await self.call.code()
        raise grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), await self.call.details())


async def refused(
    channel: grpc.aio.Channel, message: pb.ActorMessage, metadata: tuple = (), rpc: str = "Act"
) -> grpc.aio.AioRpcError:
    """The error a first message that the learner must refuse ends its stream with."""
    try:
        await Stream(channel, metadata, rpc).handshake(message)
    except grpc.aio.AioRpcError as error:
        return error
    raise AssertionError("the learner accepted the stream")
