"""The R2D2 agent: per-slot epsilon schedule, priorities from the train step, target network updates."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.algos.r2d2.agent import R2D2Agent
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(4,), observation_dtype="float32", action_space=3)


def test_epsilon_schedule_is_apex_per_slot() -> None:
    config = R2D2Config(epsilon_envs=8)
    eps = config.epsilons(np.arange(10))
    np.testing.assert_allclose(eps[:8], 0.4 ** (1 + 7 * np.arange(8) / 7), rtol=1e-6)
    assert eps[0] == pytest.approx(0.4) and eps[7] == pytest.approx(0.4**8, rel=1e-5)
    np.testing.assert_array_equal(eps[8:], eps[:2])  # slots past N wrap around


def test_inference_explores_at_each_slots_epsilon() -> None:
    agent = R2D2Agent(SPEC, R2D2Config(lstm_size=8, hidden_sizes=(8,), epsilon_envs=256))
    rows = 6000
    observations = np.random.default_rng(0).normal(size=(rows, 4)).astype(np.float32)
    state = {name: np.zeros((rows, 8), np.float32) for name in ("core_h", "core_c")}
    greedy, _ = agent.infer(observations, state, np.full(rows, 255))  # eps = 0.4^8: greedy but for ~4 rows
    explorer, _ = agent.infer(observations, state, np.zeros(rows, np.int64))  # eps = 0.4
    differs = (explorer["action"] != greedy["action"]).mean()
    assert differs == pytest.approx(0.4 * 2 / 3, abs=0.03)  # a random action differs 2 times in 3
    evaluating, _ = agent.infer(observations, state, np.zeros(rows, np.int64), np.ones(rows, bool))
    assert (evaluating["action"] != greedy["action"]).mean() < 0.005  # eval_epsilon 0.001 on any slot


def _batch(rng: np.random.Generator, steps: int, size: int) -> dict[str, np.ndarray]:
    shape = (steps, size)
    return {
        "observation": rng.normal(size=(*shape, 4)).astype(np.float32),
        "action": rng.integers(0, 3, shape, dtype=np.int32),
        "reward": rng.normal(size=shape).astype(np.float32),
        "done": rng.random(shape) < 0.05,
        "phantom": np.zeros(shape, bool),
        "core_h": np.zeros((size, 8), np.float32),
        "core_c": np.zeros((size, 8), np.float32),
        "prev_action": np.eye(3, dtype=np.float32)[rng.integers(0, 3, size)],
        "weights": rng.random(size).astype(np.float32),
    }


def test_train_step_returns_priorities_and_copies_the_target_every_k_steps() -> None:
    config = R2D2Config(lstm_size=8, hidden_sizes=(8,), burn_in=3, target_update_period=3, learning_rate=1e-2)
    agent = R2D2Agent(SPEC, config)
    rng = np.random.default_rng(1)

    def same() -> bool:
        pairs = zip(agent.network.weights, agent.target_network.weights)
        return all(np.array_equal(a.numpy(), b.numpy()) for a, b in pairs)

    assert same()
    for step in range(1, 7):
        metrics = agent.train_step(_batch(rng, 3 + 6 + 1, 5))
        priorities = metrics.pop("priorities")
        assert priorities.shape == (5,) and (priorities >= 0).all() and np.isfinite(list(metrics.values())).all()
        assert same() == (step % 3 == 0)
    assert agent._train.experimental_get_tracing_count() == 1


def test_the_loss_learns_from_no_burn_in_step() -> None:
    """Burn-in only warms the recurrent state up (R2D2, SEED): no gradient reaches its steps, so its
    observations move nothing, while every step after it does."""
    import tensorflow as tf

    config = R2D2Config(lstm_size=8, hidden_sizes=(8,), burn_in=3, n_steps=2)
    agent = R2D2Agent(SPEC, config)
    inputs = {name: tf.constant(value) for name, value in _batch(np.random.default_rng(2), 3 + 6, 4).items()}
    with tf.GradientTape() as tape:
        tape.watch(inputs["observation"])
        loss, _, _ = agent._loss(inputs)
    gradient = tape.gradient(loss, inputs["observation"]).numpy()
    assert np.abs(gradient[:3]).max() == 0.0
    assert np.abs(gradient[3:]).max() > 0.0
