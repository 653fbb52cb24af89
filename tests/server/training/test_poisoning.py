"""One hostile actor must not poison training: huge rewards are refused at the door, and where a bound
lets them through, the non-finite updates they cause are skipped, counted and never checkpointed."""

from __future__ import annotations

import asyncio

import grpc
import numpy as np
import pytest
import tensorflow as tf
from tests.conftest import small_config
from tests.waiting import until
from tests.wire import Stream, hello, steps

from aioseed.server.training.checkpoint import CheckpointRefused
from aioseed.server.training.trainer import TrainingConfig

K = 8
HUGE = 3e38  # finite in float32; its square is not


def weights_finite(learner) -> bool:
    return all(bool(tf.reduce_all(tf.math.is_finite(w))) for w in learner.agent.network.weights)


async def test_a_reward_past_max_abs_reward_gets_invalid_argument(running_learner, tmp_path) -> None:
    async with running_learner(small_config(tmp_path)) as learner:
        assert learner.config.server.max_abs_reward == 1e6
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            stream = Stream(channel)
            slots = await stream.handshake(hello(K, run_id_base=100))
            rewards = np.ones(K, np.float32)
            rewards[3] = -HUGE
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await stream.step(steps(slots, run_id_base=100, rewards=rewards))
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "steps.rewards must be finite with |r| <= 1e+06; row(s) 3 are not" in error.value.details()

async def test_a_hostile_stream_cannot_make_the_weights_non_finite(running_learner, tmp_path) -> None:
    """With the reward bound off, every batch holds the hostile stream's rows, so every update overflows:
    each is skipped and counted, the honest stream keeps getting in-range actions, and the weights and the
    shutdown checkpoint stay finite. Non-finite weights then give INTERNAL, never an action."""
    config = small_config(
        tmp_path, server={"max_abs_reward": float("inf")}, training=TrainingConfig(unroll_length=4, batch_size=2 * K)
    )
    async with running_learner(config) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            honest, hostile = Stream(channel), Stream(channel)
            honest_slots = await honest.handshake(hello(K, run_id_base=100))
            hostile_slots = await hostile.handshake(hello(K, run_id_base=200))
            huge = np.where(np.arange(K) % 2 == 0, HUGE, -HUGE).astype(np.float32)

            async def play(stream: Stream, slots: np.ndarray, base: int, rewards: np.ndarray | None) -> None:
                while learner.skipped_nonfinite < 3:
                    actions = await stream.step(steps(slots, run_id_base=base, rewards=rewards))
                    assert ((actions >= 0) & (actions < 2)).all(), actions

            await asyncio.wait_for(
                asyncio.gather(play(honest, honest_slots, 100, None), play(hostile, hostile_slots, 200, huge)), 60
            )
            assert learner.train_steps == 0  # not one update was applied
            assert weights_finite(learner)
            await until(lambda: learner.metrics().get("train/skipped_nonfinite", 0) >= 3, "the counter's snapshot")
            path = await learner.checkpoint_now()
            assert path is not None

            # Should the weights go non-finite anyway, the rows get a clear error rather than garbage actions,
            # and no checkpoint replaces the last good one.
            await learner.run_between_steps(
                lambda: learner.agent.network.weights[0].assign(tf.fill(learner.agent.network.weights[0].shape, np.nan))
            )
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await honest.step(steps(honest_slots, run_id_base=100))
            assert error.value.code() == grpc.StatusCode.INTERNAL and "non-finite" in error.value.details()
            with pytest.raises(CheckpointRefused, match="NaN or inf") as refusal:
                await learner.checkpoint_now()
            assert path in str(refusal.value)  # the last good checkpoint is kept
    # The shutdown checkpoint was refused too: the latest on disk is still the good one.
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")) == path
    # Refused is not failed: the process exits 0 (a sweep still scores the run); only a failed write exits 1.
    assert learner.final_checkpoint_error is None
