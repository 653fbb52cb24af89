"""The actor client against a real learner: run_ids, reconnects and fatal refusals."""

from __future__ import annotations

import asyncio

import grpc
import gymnasium
import numpy as np
import pytest
from gymnasium.envs.classic_control.cartpole import CartPoleEnv
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import Stream, hello

from aioseed.clients.actor import Actor, ActorConfig, ActorError
from aioseed.proto import aioseed_pb2 as pb
from aioseed.proto import aioseed_pb2_grpc as pb_grpc


def test_run_ids_are_new_per_process_start() -> None:
    config = ActorConfig(num_envs=4, envs_per_message=2)
    first, second = Actor(config), Actor(config)
    assert len(set(first.run_ids.tolist())) == 4
    assert not set(first.run_ids.tolist()) & set(second.run_ids.tolist())


async def test_reconnect_keeps_run_ids_and_slots(running_learner, tmp_path) -> None:
    config = small_config(tmp_path / "a", server={"slot_grace_s": 30.0})
    async with running_learner(config) as learner, grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
        port = learner.port
        await Stream(channel).handshake(hello(2))  # holds slots 0 and 1, so the actor gets 2..5
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{port}", num_envs=4, envs_per_message=2, backoff_max_s=0.2))
        run_ids = actor.run_ids.copy()
        task = asyncio.create_task(actor.run())
        await until(lambda: actor.steps > 50, "first steps")
        slots_before = sorted(np.concatenate(actor.slots).tolist())
        assert slots_before == [2, 3, 4, 5]
    # The learner is gone; the actor keeps retrying. A new learner on the same port:
    steps_at_restart = actor.steps
    config_b = small_config(tmp_path / "b", server={"port": port})
    async with running_learner(config_b) as learner_b:
        # The learner lists a stream before its welcome reaches the actor, so wait for the actor's count too.
        await until(
            lambda: len(learner_b.actors()) == 2 and actor.connects >= 4 and actor.steps > steps_at_restart + 50,
            "both streams welcomed back (two streams, each connected twice) and stepping",
        )
        slots_after = sorted(np.concatenate(actor.slots).tolist())
        np.testing.assert_array_equal(actor.run_ids, run_ids)
        # A fresh learner grants no slot by number that it never handed out (per-slot state would be
        # sized by the client's number): the actor takes the lowest free ones.
        assert slots_before == [2, 3, 4, 5] and slots_after == [0, 1, 2, 3]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_spec_mismatch_stops_the_actor(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path)) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", env="MountainCar-v0", num_envs=1))
        with pytest.raises(ExceptionGroup) as group:
            await asyncio.wait_for(actor.run(), 10)
        assert group.group_contains(ActorError, match="FAILED_PRECONDITION")


class HugeRewardCartPole(CartPoleEnv):
    """CartPole's spec, but a reward no honest environment gives."""

    def step(self, action):
        observation, reward, terminated, truncated, info = super().step(action)
        return observation, reward * 1e30, terminated, truncated, info


gymnasium.register("tests/HugeRewardCartPole-v0", entry_point=HugeRewardCartPole, max_episode_steps=500)


async def test_a_refused_row_stops_the_actor_instead_of_retrying(running_learner, tmp_path) -> None:
    """INVALID_ARGUMENT after the handshake (a reward past --max-abs-reward) is fatal: no reconnect loop."""
    async with running_learner(small_config(tmp_path)) as learner:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{learner.port}", env="tests/HugeRewardCartPole-v0", num_envs=1))
        with pytest.raises(ExceptionGroup) as group:
            await asyncio.wait_for(actor.run(), 10)
        assert group.group_contains(ActorError, match="INVALID_ARGUMENT.*steps.rewards")
        assert actor.connects == 1


class ShortWelcome(pb_grpc.LearnerServicer):
    """A faulty learner (unit test of the actor alone): it welcomes a hello of N envs with one slot."""

    async def Act(self, request_iterator, context):
        async for _ in request_iterator:
            yield pb.LearnerMessage(welcome=pb.Welcome(slots=[0]))
            return


async def test_a_welcome_that_does_not_fit_the_hello_stops_the_actor_with_a_clear_error() -> None:
    server = grpc.aio.server()
    pb_grpc.add_LearnerServicer_to_server(ShortWelcome(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{port}", num_envs=4, envs_per_message=4))
        with pytest.raises(ExceptionGroup) as group:
            await asyncio.wait_for(actor.run(), 10)
        assert group.group_contains(ActorError, match="hello of 4 envs with a welcome of 1 slots")
    finally:
        await server.stop(None)


async def test_a_write_to_a_stream_that_ended_meanwhile_raises_its_status_as_a_lost_stream() -> None:
    """An actor busy between a reply and its next message (IMPALA mode collects an unroll) found the call
    ended: grpc.aio's InvalidStateError was not a lost stream, and the actor died instead of reconnecting."""
    from aioseed.clients.actor import send

    async def answer_once_then_abort(requests, context: grpc.aio.ServicerContext):
        async for request in requests:
            yield request
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the learner is stopping")

    handler = grpc.method_handlers_generic_handler("t.T", {"M": grpc.stream_stream_rpc_method_handler(answer_once_then_abort)})
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.stream_stream("/t.T/M")()
            await send(call, b"first")
            assert await call.read() == b"first"
            await call.code()  # the stream has ended while the actor was busy
            with pytest.raises(grpc.aio.AioRpcError) as raised:
                await send(call, b"second")
            assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        await server.stop(None)
