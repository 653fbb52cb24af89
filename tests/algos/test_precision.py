"""``--learner.precision bfloat16``: the torso computes in bfloat16; weights, heads and the loss stay float32."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.networks import Layers
from aioseed.algos.r2d2.agent import R2D2Agent
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.spec import EnvSpec

FRAMES = EnvSpec(observation_shape=(4, 84, 84), observation_dtype="uint8", action_space=6)
T, B = 3, 2


def _batch(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "observation": rng.integers(0, 256, (T + 1, B, *FRAMES.observation_shape), dtype=np.uint8),
        "action": rng.integers(0, 6, (T + 1, B)).astype(np.int32),
        "logits": np.zeros((T + 1, B, 6), np.float32),
        "reward": rng.normal(size=(T + 1, B)).astype(np.float32),
        "done": np.zeros((T + 1, B), bool),
        "phantom": np.zeros((T + 1, B), bool),
    }


@pytest.mark.parametrize("network", ["nature_cnn", "impala_resnet"])
def test_bfloat16_torso_computes_in_bfloat16_with_float32_weights_and_outputs(network: str) -> None:
    config = ImpalaConfig(network=network)
    low = ImpalaAgent(FRAMES, config, seed=0, precision="bfloat16")
    high = ImpalaAgent(FRAMES, config, seed=0, precision="float32")
    assert all(v.dtype == tf.float32 for v in low.network.trainable_variables)  # the weights stay float32
    assert low.network.features(np.zeros((1, *FRAMES.observation_shape), np.uint8)).dtype == tf.float32
    for source, target in zip(high.network.variables, low.network.variables):
        target.assign(source)
    frames = np.random.default_rng(0).integers(0, 256, (8, *FRAMES.observation_shape), dtype=np.uint8)
    logits_low, value_low = low.network(frames)
    logits_high, value_high = high.network(frames)
    assert logits_low.dtype == value_low.dtype == tf.float32
    # bfloat16 keeps 8 bits of mantissa: close to float32, but not equal (it did compute in bfloat16).
    np.testing.assert_allclose(value_low, value_high, rtol=0.1, atol=0.05)
    assert float(tf.reduce_max(tf.abs(value_low - value_high))) > 0.0
    metrics = low.train_step(_batch(np.random.default_rng(1)))
    assert np.isfinite(metrics["losses/total"]) and metrics["skipped_nonfinite"] == 0.0


def test_r2d2_takes_the_precision_too() -> None:
    agent = R2D2Agent(FRAMES, R2D2Config(lstm_size=16, hidden_sizes=(16,)), precision="bfloat16")
    assert agent.network.base.torso.layers[0].compute_dtype == "bfloat16"
    assert all(v.dtype == tf.float32 for v in agent.network.trainable_variables)


def test_sac_computes_its_hidden_layers_in_bfloat16_and_trains() -> None:
    from aioseed.action_space import Box
    from aioseed.algos.sac.agent import SacAgent
    from aioseed.algos.sac.config import SacConfig

    spec = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=Box((2,), (-1.0, -1.0), (1.0, 1.0)))
    agent = SacAgent(spec, SacConfig(hidden_sizes=(16, 16)), precision="bfloat16")
    hidden = [agent.network.actor.torso, agent.network.critics.q1.torso, agent.target_network.q2.torso]
    assert all(layer.compute_dtype == "bfloat16" for torso in hidden for layer in torso.layers if layer.weights)
    assert agent.network.critics.q1.out.compute_dtype == "float32"  # the heads stay float32
    assert all(v.dtype == tf.float32 for v in agent.network.trainable_variables)
    rng = np.random.default_rng(0)
    batch = {
        "observation": rng.normal(size=(2, 8, 3)).astype(np.float32), "action": rng.normal(size=(2, 8, 2)).astype(np.float32),
        "reward": rng.normal(size=(2, 8)).astype(np.float32), "done": np.zeros((2, 8), bool), "phantom": np.zeros((2, 8), bool),
    }
    metrics = agent.train_step(batch)
    assert np.isfinite(metrics["losses/critic"]) and metrics["skipped_nonfinite"] == 0


def test_unknown_precision_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown precision"):
        Layers(precision="float16")
