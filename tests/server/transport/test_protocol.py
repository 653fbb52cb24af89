"""Bad input on one stream gets a precise status while a healthy stream keeps getting actions."""

from __future__ import annotations

import asyncio
import contextlib

import grpc
import numpy as np
import pytest
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import CARTPOLE, Stream, hello, refused, steps

from aioseed.spec import EnvSpec


class Healthy:
    """A well-behaved stream that steps in the background and counts its answers."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self.stream = Stream(channel)
        self.answers = 0
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.stream.handshake(hello(2, run_id_base=7000))
        self.task = asyncio.create_task(self._loop())

    async def _loop(self) -> None:
        while True:
            actions = await self.stream.step(steps(self.stream.slots, run_id_base=7000))
            assert actions.shape == (2,) and set(actions.tolist()) <= {0, 1}
            self.answers += 1

    async def progressed(self, since: int, by: int = 5) -> None:
        """Waits (bounded) until the stream answered ``by`` more times; re-raises the stream's failure."""

        def answered() -> bool:
            if self.task.done():
                self.task.result()
            return self.answers >= since + by

        await until(answered, f"the healthy stream to answer {by} more times (it stalled at {self.answers})", 500)


@contextlib.asynccontextmanager
async def serving(running_learner, tmp_path, **overrides):
    async with running_learner(small_config(tmp_path, **overrides)) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            healthy = Healthy(channel)
            await healthy.start()
            yield learner, channel, healthy
            healthy.task.cancel()


def _drop_row(slots: np.ndarray):
    return steps(slots[:1])


def _padded(slots: np.ndarray):
    message = steps(slots)
    message.steps.MergeFromString(b"\xa2\x06\xe8\x07" + bytes(1000))  # an unknown field of 1,000 bytes
    return message


def _reordered(slots: np.ndarray, run_ids: list[int]):
    """The two slots listed in reverse order, with ``run_ids`` in that order."""
    message = steps(slots[::-1])
    message.steps.run_ids = np.array(run_ids, "<u8").tobytes()
    return message


BAD_MESSAGES = {
    "observation bytes": (lambda slots: steps(slots, observations=np.zeros((2, 3), np.float32)), "steps.observations has 24 bytes, expected 32"),
    "row count": (_drop_row, "steps.slots has 4 bytes, expected 8"),
    "padding": (_padded, "is longer than a Steps message of 2 rows can be"),
    "unowned slot": (lambda slots: steps(np.array([slots[0], 999], np.int32)), "slots 999 are not owned"),
    "duplicate slot": (lambda slots: steps(np.array([slots[0], slots[0]], np.int32)), "appears twice"),
    "nan reward": (lambda slots: steps(slots, rewards=np.array([1.0, np.nan])), "row(s) 1 are not"),
    "infinite observation": (
        lambda slots: steps(slots, observations=np.array([[0, 0, 0, np.inf], [0, 0, 0, 0]], np.float32)),
        "observations must be finite",
    ),
    "another run id": (lambda slots: steps(slots, run_id_base=100), "has 100, its Hello gave 1000"),
    "run ids not following their slots": (lambda slots: _reordered(slots, run_ids=[1000, 1001]), "has 1000, its Hello gave 1001"),
    "unknown flag": (lambda slots: steps(slots, flags=np.array([0, 8])), "flags may only set"),
    "final without an episode end": (lambda slots: steps(slots, flags=np.array([4, 0])), "flags may only set"),
    "life lost without a final termination": (lambda slots: steps(slots, flags=np.array([0, 8 | 1])), "flags may only set"),
}


@pytest.mark.parametrize("case", list(BAD_MESSAGES))
async def test_bad_message_gets_invalid_argument_and_others_carry_on(running_learner, tmp_path, case) -> None:
    make, expected = BAD_MESSAGES[case]
    async with serving(running_learner, tmp_path) as (learner, channel, healthy):
        bad = Stream(channel)
        slots = await bad.handshake(hello(2))
        await bad.step(steps(slots))  # a good message first
        before = healthy.answers
        with pytest.raises(grpc.aio.AioRpcError) as error:
            await bad.step(make(slots))
        assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert expected in error.value.details()
        await healthy.progressed(before)
        # The refused stream's slots come back after the grace period.
        assert len(learner.actors()) == 1


async def test_a_stream_may_list_its_slots_in_any_order_with_their_hellos_run_ids(running_learner, tmp_path) -> None:
    async with serving(running_learner, tmp_path) as (learner, channel, healthy):
        stream = Stream(channel)
        slots = await stream.handshake(hello(2))
        for _ in range(3):
            assert (await stream.step(_reordered(slots, run_ids=[1001, 1000]))).shape == (2,)


async def test_a_lost_life_row_is_answered_like_any_final_row(running_learner, tmp_path) -> None:
    from aioseed.types import FINAL, LIFE_LOST, TERMINATED

    async with serving(running_learner, tmp_path) as (learner, channel, healthy):
        stream = Stream(channel)
        slots = await stream.handshake(hello(2, run_id_base=100))
        await stream.step(steps(slots, run_id_base=100))
        lost = await stream.step(steps(slots, run_id_base=100, flags=np.array([LIFE_LOST | FINAL | TERMINATED, 0])))
        assert lost.shape == (2,)
        await stream.step(steps(slots, run_id_base=100))  # the game goes on
        await healthy.progressed(healthy.answers)


async def test_spec_mismatch_gets_failed_precondition_naming_both_specs(running_learner, tmp_path) -> None:
    async with serving(running_learner, tmp_path) as (_, channel, healthy):
        before = healthy.answers
        wrong = EnvSpec(observation_shape=(5,), observation_dtype="float64", action_space=3)
        error = await refused(channel, hello(2, spec=wrong))
        assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "float64[5], 3 actions" in error.details()
        assert CARTPOLE.describe() in error.details()
        await healthy.progressed(before)


async def test_steps_before_hello_is_invalid(running_learner, tmp_path) -> None:
    async with serving(running_learner, tmp_path) as (_, channel, healthy):
        error = await refused(channel, steps(np.array([0, 1], np.int32)))
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "first message must be a hello" in error.details()
        await healthy.progressed(healthy.answers)


async def test_an_oversized_hello_is_refused_before_it_is_parsed_or_kept(running_learner, tmp_path) -> None:
    """A stream keeps its hello while it lives: a 4 MiB actor name, or padding, times thousands of streams would
    exhaust the learner's memory. Names are capped, and a hello longer than any honest one is refused unread."""
    async with serving(running_learner, tmp_path) as (_, channel, healthy):
        named = hello(2)
        named.hello.actor_name = "x" * 4_000_000
        error = await refused(channel, named)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "a hello of 400" in error.details()
        named.hello.actor_name = "x" * 300
        error = await refused(channel, named)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "actor_name has 300 characters" in error.details()
        await healthy.progressed(healthy.answers)


async def test_token_is_required_when_configured(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path, server={"token": "s3cret"})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            for metadata in ((), (("authorization", "Bearer wrong"),)):
                error = await refused(channel, hello(1), metadata)
                assert error.code() == grpc.StatusCode.UNAUTHENTICATED
            assert learner.connected_envs == 0  # refused before any state was touched
            assert learner.auth_refused == 2  # counted, and reported as actors/auth_refused
            slots = await Stream(channel, (("authorization", "Bearer s3cret"),)).handshake(hello(1))
            assert len(slots) == 1


def test_a_bool_observation_byte_other_than_0_or_1_is_refused() -> None:
    """np.frombuffer reads any byte as a bool; TensorFlow's cast of such a value is undefined."""
    from aioseed.action_space import Discrete
    from aioseed.server.transport.protocol import ProtocolError, RowParser

    spec = EnvSpec(observation_shape=(4,), observation_dtype="bool", action_space=Discrete(2))
    parser = RowParser(spec, np.array([0, 1], np.int32), np.array([1000, 1001], np.uint64))
    good = np.array([[0, 1, 1, 0], [1, 1, 0, 0]], bool)
    np.testing.assert_array_equal(parser.parse(steps(np.array([0, 1]), observations=good))["observation"], good)
    with pytest.raises(ProtocolError, match="must hold bytes 0 or 1"):
        parser.parse(steps(np.array([0, 1]), observations=np.array([[0, 2, 1, 0], [1, 1, 0, 0]], np.uint8)))


async def test_a_hello_of_more_envs_than_a_message_can_hold_is_refused_not_welcomed(running_learner, tmp_path) -> None:
    """Welcomed, every Steps message of its K rows was past gRPC's own limit: RESOURCE_EXHAUSTED, which actors
    retry forever. CartPole's longest message of K rows is 33 K + 64 bytes: 1,000 bytes hold 28 rows."""
    async with running_learner(small_config(tmp_path, server={"max_message_bytes": 1000})) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            error = await refused(channel, hello(29))
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "must be in [1, 28]" in error.details() and "max_message_bytes" in error.details()
            stream = Stream(channel)
            slots = await stream.handshake(hello(28))
            actions = await stream.step(steps(slots, observations=np.zeros((28, 4), np.float32)))
            assert actions.shape == (28,)  # the longest it welcomes gets through gRPC
