"""Running statistics on the learner: merged moments, the observation normaliser and reward scaling."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from aioseed.action_space import Box
from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.policy import ImpalaPolicy
from aioseed.algos.normalization import Moments, RewardScaler, RunningNormalizer, batch_moments, merge_moments
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=Box((1,), (-2.0,), (2.0,)))


def test_merged_moments_equal_the_moments_of_all_samples_together() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(3.0, 2.0, (50, 4)), rng.normal(-1.0, 0.5, (70, 4))
    merged = merge_moments(batch_moments(tf.constant(a)), batch_moments(tf.constant(b)))
    both = np.concatenate([a, b])
    np.testing.assert_allclose(merged.mean, both.mean(0), rtol=1e-10)
    np.testing.assert_allclose(merged.variance, both.var(0), rtol=1e-10)
    assert float(merged.count) == 120
    empty = Moments(tf.constant(0.0, tf.float64), tf.zeros(4, tf.float64), tf.ones(4, tf.float64))
    np.testing.assert_allclose(merge_moments(empty, batch_moments(tf.constant(a))).variance, a.var(0), rtol=1e-10)


def test_the_normaliser_scales_and_clips_with_what_it_has_seen() -> None:
    layer = RunningNormalizer((2,), clip=5.0)
    x = np.array([[10.0, -4.0], [12.0, -2.0], [14.0, 0.0]])
    np.testing.assert_allclose(layer(tf.constant(x, tf.float32)), np.clip(x, -5, 5), rtol=1e-6)  # nothing seen yet
    layer.update(x)
    scaled = layer(tf.constant([[12.0, -2.0], [100.0, -2.0]], tf.float32)).numpy()
    np.testing.assert_allclose(scaled[0], [0.0, 0.0], atol=1e-6)
    assert scaled[1, 0] == 5.0  # clipped


def test_reward_scaling_divides_by_the_discounted_returns_deviation_per_slot_in_order() -> None:
    scaler = RewardScaler(discount=0.5, clip=100.0)
    rewards = np.array([[0.0, 0.0], [2.0, 4.0], [2.0, 4.0]], np.float32)  # [T + 1, B]: steps 1 and 2 count
    done = np.zeros((3, 2), bool)
    scaled = scaler.scale(rewards, done, np.array([0, 1]))
    returns = np.array([2.0, 4.0, 3.0, 6.0])  # slot 0: 2, 2 + 0.5 * 2; slot 1: 4, 4 + 0.5 * 4
    np.testing.assert_allclose(scaled, rewards / np.sqrt(returns.var() + 1e-8), rtol=1e-6)
    scaler.scale(rewards, np.array([[0, 0], [1, 0], [0, 0]], bool), np.array([0, 1]))
    assert scaler._returns == {0: 3.0, 1: 4.0 + 0.5 * (4.0 + 0.5 * 6.0)}  # slot 0 restarted at its episode's end


def test_consecutive_unrolls_of_one_slot_in_a_batch_carry_the_return_on() -> None:
    scaler = RewardScaler(discount=0.5, clip=100.0)
    rewards = np.array([[0.0, 0.0], [2.0, 2.0], [2.0, 2.0]], np.float32)
    scaler.scale(rewards, np.zeros((3, 2), bool), np.array([7, 7]))  # two unrolls of slot 7, in order
    assert scaler._returns == {7: 2.0 + 0.5 * (2.0 + 0.5 * (2.0 + 0.5 * 2.0))}
    assert scaler.count.numpy() == 4 and scaler.mean.numpy() == np.mean([2.0, 3.0, 3.5, 3.75])


def test_the_agents_statistics_update_in_training_are_checkpointed_and_travel_with_the_weights(tmp_path) -> None:
    config = ImpalaConfig(normalize_observations=True, scale_rewards=True)
    agent = ImpalaAgent(SPEC, config)
    rng = np.random.default_rng(1)
    batch = {
        "observation": rng.normal(5.0, 3.0, (9, 4, 3)).astype(np.float32), "action": rng.normal(size=(9, 4, 1)).astype(np.float32),
        "logits": np.zeros((9, 4, 2), np.float32), "reward": rng.normal(size=(9, 4)).astype(np.float32),
        "done": np.zeros((9, 4), bool), "phantom": np.zeros((9, 4), bool), "slot": np.arange(4, dtype=np.int32),
    }
    agent.train_step(batch)
    np.testing.assert_allclose(agent._normalizer.mean.numpy(), batch["observation"][1:].reshape(-1, 3).mean(0), rtol=1e-5)
    path = tf.train.Checkpoint(**agent.checkpoint_objects()).save(str(tmp_path / "ckpt"))
    restored = ImpalaAgent(SPEC, config)
    tf.train.Checkpoint(**restored.checkpoint_objects()).restore(path).expect_partial()
    np.testing.assert_array_equal(restored._normalizer.mean.numpy(), agent._normalizer.mean.numpy())
    assert float(restored._reward_scaler.variance.numpy()) == float(agent._reward_scaler.variance.numpy())
    actor = ImpalaPolicy(SPEC, config)  # an IMPALA-mode actor loads the learner's variables, statistics included
    actor.load_policy_variables([v.numpy() for v in agent.policy_variables()])
    observations = rng.normal(size=(2, 3)).astype(np.float32)
    np.testing.assert_allclose(actor.network(observations)[1], agent.network(observations)[1], rtol=1e-6)


def test_scaled_rewards_cannot_be_a_network_input() -> None:
    with pytest.raises(ValueError, match="scaled rewards in training and raw ones when acting"):
        ImpalaConfig(scale_rewards=True, previous_action_reward=True)


def test_a_train_step_normalises_the_batch_as_its_acting_did() -> None:
    """The statistics move after the updates: moved before them, the learner saw other inputs than the behaviour
    policy did, and the importance weights of a batch with no policy lag were not 1."""
    agent = ImpalaAgent(SPEC, ImpalaConfig(normalize_observations=True, learning_rate=1e-12), seed=0)
    rng = np.random.default_rng(2)
    observations = rng.normal(5.0, 3.0, (9, 4, 3)).astype(np.float32)
    out, _ = agent.infer(observations.reshape(-1, 3), {})
    batch = {
        "observation": observations, "action": out["action"].reshape(9, 4, 1), "logits": out["logits"].reshape(9, 4, -1),
        "reward": rng.normal(size=(9, 4)).astype(np.float32), "done": np.zeros((9, 4), bool), "phantom": np.zeros((9, 4), bool),
        "slot": np.arange(4, dtype=np.int32),
    }
    metrics = agent.train_step(batch)
    assert metrics["policy/rho_clipped_mean"] == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(agent._normalizer.mean.numpy(), observations[1:].reshape(-1, 3).mean(0), rtol=1e-5)
