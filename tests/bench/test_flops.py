"""The compute floor of a SAC update: its matrix products counted from the networks, cross-checked against
TensorFlow's own float-operation count of the traced update."""

from __future__ import annotations

import math

import pytest
import tensorflow as tf
from tensorflow.python.profiler import model_analyzer, option_builder

from aioseed.action_space import Box
from aioseed.algos.sac.agent import SacAgent
from aioseed.algos.sac.config import SacConfig
from aioseed.bench.flops import dense_macs, matmul_flops_per_s, sac_update_flops
from aioseed.spec import EnvSpec

OBS, ACT, ROWS = 17, 6, 64
SPEC = EnvSpec(observation_shape=(OBS,), observation_dtype="float32", action_space=Box((ACT,), (-1.0,) * ACT, (1.0,) * ACT))


def test_dense_macs_count_every_kernel_of_the_policy_and_both_critics() -> None:
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(32, 16)))
    actor = OBS * 32 + 32 * 16 + 16 * 2 * ACT  # the head: a mean and a log-std per action dimension
    critic = (OBS + ACT) * 32 + 32 * 16 + 16 * 1
    assert dense_macs(agent.network.actor.trainable_variables) == actor
    assert dense_macs(agent.network.critics.trainable_variables) == 2 * critic


def test_the_update_count_matches_tensorflows_count_of_the_traced_fused_update() -> None:
    """Two fused updates with policy_frequency 2: two critic updates and two policy updates, so the formula's
    per-update average times two. TensorFlow's count is of the graph before pruning: it also holds the critics'
    weight gradients in the policy update, which nothing reads (a tenth more); the formula leaves them out."""
    agent = SacAgent(SPEC, SacConfig(minibatches=2))
    signature = {
        "observation": tf.TensorSpec([2, 2 * ROWS, OBS], tf.float32),
        "action": tf.TensorSpec([2, 2 * ROWS, ACT], tf.float32),
        "reward": tf.TensorSpec([2, 2 * ROWS], tf.float32),
        "done": tf.TensorSpec([2, 2 * ROWS], tf.bool),
        "phantom": tf.TensorSpec([2, 2 * ROWS], tf.bool),
    }
    graph = agent._train_fused.get_concrete_function(signature, (True, False)).graph
    options = {**option_builder.ProfileOptionBuilder.float_operation(), "output": "none"}
    traced = model_analyzer.profile(graph, options=options).total_float_ops
    actor, critics = (dense_macs(net.trainable_variables) for net in (agent.network.actor, agent.network.critics))
    counted = 2 * sac_update_flops(actor, critics, ROWS)
    dead_weight_gradients = 2 * 2.0 * critics * ROWS
    assert counted < traced
    assert traced == pytest.approx(counted + dead_weight_gradients, rel=0.03)
    assert sac_update_flops(actor, critics, ROWS) - sac_update_flops(actor, critics, ROWS, autotune_alpha=False) == 2.0 * actor * ROWS


def test_the_matmul_rate_is_measured_in_each_precision() -> None:
    for precision in ("float32", "bfloat16"):
        rate = matmul_flops_per_s(ROWS, 64, precision, seconds=0.2, chain=4)
        assert math.isfinite(rate) and 1e8 < rate < 1e13, (precision, rate)
