"""The IMPALA loss on SEED's unroll layout: termination zeroes the bootstrap, truncation keeps it."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.impala.loss import clip_rewards, impala_loss

GAMMA = 0.9
VALUES = np.array([[0.5], [4.0], [-3.0]], np.float32)  # V(x_0), V(x_1), V(x_2)
LOGITS = np.array([[[0.3, -0.2]], [[0.1, 0.4]], [[-1.0, 1.0]]], np.float32)


def _losses(done_1: bool, phantom_1: bool):
    """One env, T = 2: x_0 -a_0-> x_1 (reward 1), then x_2 is the next episode's first row."""
    return impala_loss(
        logits=tf.constant(LOGITS),
        values=tf.constant(VALUES),
        behaviour_logits=tf.constant(LOGITS),  # on-policy: rho = 1
        actions=tf.constant([[0], [1], [0]], tf.int32),
        rewards=tf.constant([[0.0], [1.0], [0.0]], tf.float32),
        done=tf.constant([[False], [done_1], [not done_1]]),
        phantom=tf.constant([[False], [phantom_1], [False]]),
        discount=GAMMA,
        baseline_cost=0.5,
        entropy_cost=0.0,
    )


def test_truncation_bootstraps_from_the_final_observation() -> None:
    # x_1 is the truncated episode's final observation (a phantom row): the target of
    # V(x_0) is r + gamma V(x_1), and the phantom row itself adds nothing to the loss.
    losses = _losses(done_1=False, phantom_1=True)
    advantage = 1.0 + GAMMA * VALUES[1, 0] - VALUES[0, 0]
    assert float(losses.baseline) == pytest.approx(0.5 * advantage**2 / 2, rel=1e-5)
    logp_0 = float(tf.nn.log_softmax(LOGITS[0, 0])[0])
    assert float(losses.policy_gradient) == pytest.approx(-logp_0 * advantage / 2, rel=1e-5)


def test_termination_zeroes_the_bootstrap() -> None:
    # x_1 is the next episode's first observation after a termination: the target is r alone.
    losses = _losses(done_1=True, phantom_1=False)
    terminal_advantage = 1.0 - VALUES[0, 0]
    # Step 1 is a real step here: its target is r_2 + gamma * V(x_2) with done_2 = False.
    step_1 = 0.0 + GAMMA * VALUES[2, 0] - VALUES[1, 0]
    assert float(losses.baseline) == pytest.approx(0.5 * (terminal_advantage**2 + step_1**2) / 2, rel=1e-5)


def test_reward_clipping_modes() -> None:
    rewards = tf.constant([-10.0, -0.5, 0.0, 0.5, 10.0])
    np.testing.assert_allclose(clip_rewards(rewards, "none"), rewards)
    np.testing.assert_allclose(clip_rewards(rewards, "abs"), [-1.0, -0.5, 0.0, 0.5, 1.0])
    soft = clip_rewards(rewards, "soft_asymmetric").numpy()
    np.testing.assert_allclose(soft, np.where(rewards < 0, 0.3, 1.0) * 5.0 * np.tanh(rewards.numpy() / 5.0), rtol=1e-6)
    with pytest.raises(ValueError):
        clip_rewards(rewards, "bogus")
