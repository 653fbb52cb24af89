"""IMPALA mode on a Box: an upload's behaviour log-std must lie in the policy's own range, pre-squash actions past
tanh's saturation are clipped and counted, and nothing accepted can make a loss non-finite (issue 57, item 3)."""

from __future__ import annotations

import functools

import grpc
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.server.transport.test_impala_mode import TOKEN, impala_config, zero_unrolls
from tests.waiting import until
from tests.wire import Stream, hello

from aioseed.action_space import LOG_STD_MAX, LOG_STD_MIN, MAX_ABS_PRESQUASH, Box
from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.impala_actor.actor import upload_message
from aioseed.server.transport.protocol import ProtocolError, RowBounds
from aioseed.server.transport.uploads import MAX_ABS_LOGIT, UnrollParser
from aioseed.spec import EnvSpec
from aioseed.types import step_columns

T, K = 4, 2
BOX = Box((1,), (-2.0,), (2.0,))
PENDULUM = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=BOX)
COLUMNS = {**step_columns((3,), np.float32), "action": ((1,), np.float32), "logits": ((2,), np.float32)}
SLOTS = np.arange(K, dtype=np.int32)


def unrolls(mean: float = 0.0, log_std: float = -0.5, u: float = 0.3) -> dict[str, np.ndarray]:
    steps = (K, T + 1)
    logits = np.stack([np.full(steps, mean), np.full(steps, log_std)], -1).astype(np.float32)
    return {
        "observation": np.random.default_rng(0).normal(size=(*steps, 3)).astype(np.float32),
        "reward": np.ones(steps, np.float32), "done": np.zeros(steps, bool), "phantom": np.zeros(steps, bool),
        "version": np.zeros(steps, np.int64), "action": np.full((*steps, 1), u, np.float32), "logits": logits,
        "slot": np.arange(K, dtype=np.int32),
    }


def parse(sent: dict[str, np.ndarray]):
    parser = UnrollParser(columns=COLUMNS, per_unroll=[], unroll_length=T, slots=SLOTS, space=BOX, bounds=RowBounds(100.0, 1e6))
    return parser.parse(upload_message(sent, SLOTS, [], []), newest_version=0)


@pytest.mark.parametrize("log_std", [-1e6, LOG_STD_MIN - 0.01, LOG_STD_MAX + 0.01, 1e6])
def test_a_behaviour_log_std_the_policy_cannot_produce_is_refused(log_std: float) -> None:
    with pytest.raises(ProtocolError, match=r"log-std half must lie in \[-5, 2\], the policy's range; unroll row\(s\) 0, 1 are not"):
        parse(unrolls(log_std=log_std))  # before: accepted; its log-density was 0 x inf = NaN


def test_pre_squash_actions_past_saturation_are_clipped_and_counted_and_the_env_action_is_the_same() -> None:
    for edge in (LOG_STD_MIN, LOG_STD_MAX):
        assert parse(unrolls(log_std=edge)).clipped_actions == 0  # the range's own ends are the policy's
    upload = parse(unrolls(u=-1e6))
    assert upload.clipped_actions == K * (T + 1)
    assert all((unroll["action"] == -MAX_ABS_PRESQUASH).all() for unroll in upload.unrolls)
    # tanh has saturated in float32 well before the bound: the squashed action the env saw is unchanged
    assert np.tanh(np.float32(MAX_ABS_PRESQUASH)) == np.tanh(np.float32(1e6)) == np.float32(1.0)


@functools.cache
def agents() -> dict[str, ImpalaAgent]:
    """V-trace and PPO (GAE targets, clipped ratios) learners on the Box, traced once for every example."""
    return {
        "vtrace": ImpalaAgent(PENDULUM, ImpalaConfig()),
        "ppo": ImpalaAgent(PENDULUM, ImpalaConfig(epochs=2, minibatches=2, ppo_clip=0.2, targets="gae")),
    }


FLOAT = functools.partial(st.floats, allow_nan=False, width=32)
EXTREMES = {
    "mean": st.one_of(st.sampled_from([-MAX_ABS_LOGIT, MAX_ABS_LOGIT, 0.0]), FLOAT(-MAX_ABS_LOGIT, MAX_ABS_LOGIT)),
    "log_std": st.one_of(st.sampled_from([LOG_STD_MIN, LOG_STD_MAX]), FLOAT(LOG_STD_MIN, LOG_STD_MAX)),
    "u": st.one_of(st.sampled_from([-1e6, 1e6, -MAX_ABS_PRESQUASH, MAX_ABS_PRESQUASH]), FLOAT(-1e6, 1e6)),
}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(algorithm=st.sampled_from(["vtrace", "ppo"]), hostile=st.fixed_dictionaries(EXTREMES), rows=st.integers(1, K))
def test_no_accepted_upload_makes_a_loss_or_a_weight_non_finite(algorithm: str, hostile: dict[str, float], rows: int) -> None:
    """Over the accepted domain (logits within MAX_ABS_LOGIT, log-stds in the policy's range, any u the bound lets
    in, clipped as the parser clips it), in a batch beside honest unrolls."""
    agent = agents()[algorithm]
    honest = [unroll for unroll in parse(unrolls()).unrolls]
    accepted = parse(unrolls(**hostile)).unrolls[:rows]
    batch = {name: np.stack([unroll[name] for unroll in [*accepted, *honest[rows:]]], 1) for name in COLUMNS if name != "version"}
    batch["slot"] = np.arange(K, dtype=np.int32)
    before = [weight.numpy() for weight in agent.network.weights]
    metrics = agent.train_step(batch)
    bad = {name: value for name, value in metrics.items() if not np.isfinite(value)}
    finite = all(bool(tf.reduce_all(tf.math.is_finite(weight))) for weight in agent.network.weights)
    for weight, value in zip(agent.network.weights, before):
        weight.assign(value)  # the next example starts from the same weights
    assert not bad and finite, (hostile, bad)


async def test_a_learner_refuses_the_upload_with_invalid_argument_and_counts_clipped_actions(running_learner, tmp_path) -> None:
    config = impala_config(tmp_path, env="Pendulum-v1", training={"batch_size": 2, "unroll_length": T})
    async with running_learner(config) as learner:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{learner.port}") as channel:
            stream = Stream(channel, TOKEN, "Learn")
            slots = await stream.handshake(hello(K, spec=PENDULUM))
            sent = zero_unrolls(learner, K)
            sent["action"][:] = 50.0  # past saturation: accepted, clipped
            await stream.send(upload_message(sent, slots, [], []))
            sent["logits"][..., 1] = -1e6  # within MAX_ABS_LOGIT, but no log-std the policy can produce
            with pytest.raises(grpc.aio.AioRpcError) as error:
                await stream.send(upload_message(sent, slots, [], []))
            assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "log-std half must lie in [-5, 2]" in error.value.details()
        await until(lambda: learner.metrics().get("impala/clipped_actions") == K * (T + 1), "the clipped actions counted")
        assert learner.train_steps == 0 or all(bool(tf.reduce_all(tf.math.is_finite(w))) for w in learner.agent.network.weights)
