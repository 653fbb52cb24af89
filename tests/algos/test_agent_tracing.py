"""Steady state never retraces: inference takes any batch size through one concrete function,
and the train step keeps its one trace across learning-rate changes."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.spec import EnvSpec

PONG = EnvSpec(observation_shape=(4, 84, 84), observation_dtype="uint8", num_actions=6)


def _batch(agent: ImpalaAgent, steps: int, size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    shape = (steps, size)
    return {
        "observation": rng.integers(0, 255, (*shape, *PONG.observation_shape), dtype=np.uint8),
        "action": rng.integers(0, PONG.num_actions, shape, dtype=np.int32),
        "logits": rng.normal(size=(*shape, PONG.num_actions)).astype(np.float32),
        "reward": rng.normal(size=shape).astype(np.float32),
        "done": rng.random(shape) < 0.1,
        "phantom": np.zeros(shape, bool),
        **{name: rng.normal(size=(size, *column)).astype(dtype) for name, (column, dtype) in agent.state_columns().items()},
    }


@pytest.mark.parametrize("network, lstm_size", [("nature_cnn", 0), ("impala_resnet", 0), ("nature_cnn", 32)])
def test_inference_and_train_step_trace_once(network: str, lstm_size: int) -> None:
    agent = ImpalaAgent(PONG, ImpalaConfig(network=network, lstm_size=lstm_size))
    rng = np.random.default_rng(0)
    for size in (1, 3, 17, 64, 5, 256):
        state = {name: np.zeros((size, *column), dtype) for name, (column, dtype) in agent.state_columns().items()}
        out, next_state = agent.infer(rng.integers(0, 255, (size, *PONG.observation_shape), dtype=np.uint8), state)
        assert out["action"].shape == (size,) and out["logits"].shape == (size, PONG.num_actions)
        assert {name: value.shape for name, value in next_state.items()} == {
            name: (size, *column) for name, (column, _) in agent.state_columns().items()
        }
    assert agent.policy.act.experimental_get_tracing_count() == 1

    before = [w.numpy().copy() for w in agent.network.trainable_weights]
    for step in range(3):
        metrics = agent.train_step(_batch(agent, 6, 2, rng))
        assert all(np.isfinite(v) for v in metrics.values())
        if step == 1:
            agent.set_learning_rate(1e-4)
    assert agent._train.experimental_get_tracing_count() == 1
    after = agent.network.trainable_weights
    assert all(not np.array_equal(b, a.numpy()) for b, a in zip(before, after))  # every layer learns
