"""Continuous actions over real gRPC: a learner serving Pendulum answers float32 actions inside the box,
refuses actors of another action space, and refuses bad continuous observations stream by stream."""

from __future__ import annotations

import asyncio

import grpc
import numpy as np
import pytest
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import CARTPOLE, Stream, hello, refused, steps

from aioseed.action_space import Box, MultiDiscrete
from aioseed.spec import EnvSpec

PENDULUM = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=Box((1,), (-2.0,), (2.0,)))


def observations(k: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(k, 3)).astype(np.float32)


async def box_actions(stream: Stream, k: int, seed: int = 0, run_id_base: int = 1000) -> np.ndarray:
    reply = await stream.send(steps(stream.slots, run_id_base=run_id_base, observations=observations(k, seed)))
    return np.frombuffer(reply.actions.actions, "<f4").reshape(k, 1)


@pytest.fixture
def pendulum(tmp_path):
    return small_config(tmp_path, env="Pendulum-v1", training={"batch_size": 2, "unroll_length": 4})


async def test_a_box_learner_answers_float_actions_inside_the_box_and_trains_on_them(running_learner, pendulum) -> None:
    async with running_learner(pendulum) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            stream = Stream(channel)
            await stream.handshake(hello(4, spec=PENDULUM))
            seen = []
            for i in range(24):
                actions = await box_actions(stream, 4, seed=i)
                assert np.isfinite(actions).all() and (np.abs(actions) <= 2.0).all()
                seen.append(actions)
            # Sampled from a Gaussian squashed into [-2, 2]: spread out, not one repeated value.
            assert np.std(np.concatenate(seen)) > 0.1
            # 24 unrolls are queued for a batch of 2; the bound only covers tracing the first step on a loaded host.
            await until(lambda: learner.train_steps >= 1, "a train step on the Box unrolls", 3000)
            assert learner._service.clipped_action_rows == 0  # tanh keeps every action inside: none clipped


@pytest.mark.parametrize(
    ("theirs", "named"),
    [(CARTPOLE, "4], 2 actions"), (EnvSpec((3,), "float32", 3), "3 actions"), (EnvSpec((3,), "float32", MultiDiscrete((2, 2))), "MultiDiscrete[2,2]"),
     (EnvSpec((3,), "float32", Box((1,), (-1.0,), (1.0,))), "Box[1] actions in [-1, 1]")],
)
async def test_an_actor_of_another_action_space_gets_failed_precondition_naming_both(running_learner, pendulum, theirs, named) -> None:
    async with running_learner(pendulum) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            error = await refused(channel, hello(2, spec=theirs))
            assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert named in error.details() and PENDULUM.describe() in error.details()


BAD_OBSERVATIONS = {
    "nan": (np.array([[0, np.nan, 0], [0, 0, 0]], np.float32).tobytes(), "observations must be finite"),
    "infinite": (np.array([[0, 0, 0], [-np.inf, 0, 0]], np.float32).tobytes(), "observations must be finite"),
    "wrong shape": (np.zeros((2, 4), np.float32).tobytes(), "steps.observations has 32 bytes, expected 24"),
    "wrong dtype": (np.zeros((2, 3), np.float64).tobytes(), "steps.observations has 48 bytes, expected 24"),
}


@pytest.mark.parametrize("case", list(BAD_OBSERVATIONS))
async def test_bad_continuous_observations_get_invalid_argument_while_others_act(running_learner, pendulum, case) -> None:
    data, expected = BAD_OBSERVATIONS[case]
    async with running_learner(pendulum) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            healthy, bad = Stream(channel), Stream(channel)
            await healthy.handshake(hello(2, spec=PENDULUM, run_id_base=7000))
            await bad.handshake(hello(2, spec=PENDULUM, run_id_base=100))
            message = steps(bad.slots, run_id_base=100, observations=observations(2))
            message.steps.observations = data
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await bad.send(message)
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert expected in error.value.details()
            for i in range(3):  # the other stream carries on
                actions = await asyncio.wait_for(box_actions(healthy, 2, seed=i, run_id_base=7000), 30)
                assert (np.abs(actions) <= 2.0).all()
