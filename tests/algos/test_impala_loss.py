"""The IMPALA loss on SEED's unroll layout: termination zeroes the bootstrap, truncation keeps it."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.impala.loss import clipped_surrogate_loss, diagnostics, impala_loss, normalize, targets
from aioseed.algos.rewards import clip_rewards

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


def test_abs_clipping_takes_a_threshold() -> None:
    rewards = tf.constant([-10.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(clip_rewards(rewards, "abs", 2.5), [-2.5, -2.0, 0.5, 2.5])


def test_normalize_uses_only_valid_steps() -> None:
    advantages = tf.constant([[1.0, 3.0], [100.0, 5.0]])
    valid = tf.constant([[1.0, 1.0], [0.0, 1.0]])
    normalized = normalize(advantages, valid).numpy()
    kept = normalized[valid.numpy() > 0]
    assert abs(kept.mean()) < 1e-6 and abs(kept.std() - 1.0) < 1e-5
    assert normalized[1, 0] == 0.0  # the invalid step is masked out


def _surrogate(logits, proximal_logits, advantages, clip=0.2):
    actions = tf.constant([[0, 1]], tf.int32)
    proximal = tf.reduce_sum(tf.nn.log_softmax(proximal_logits) * tf.one_hot(actions, 3), -1)
    return clipped_surrogate_loss(
        logits=logits,
        values=tf.zeros([1, 2]),
        proximal_log_probs=proximal,
        actions=actions,
        advantages=tf.constant(advantages, tf.float32),
        value_targets=tf.zeros([1, 2]),
        valid=tf.ones([1, 2]),
        clip_epsilon=clip,
        baseline_cost=0.5,
        entropy_cost=0.0,
    )


def test_surrogate_gradient_at_the_proximal_policy_is_the_policy_gradient() -> None:
    logits = tf.Variable(np.random.default_rng(0).normal(size=(1, 2, 3)).astype(np.float32))
    advantages = [[0.7, -1.3]]
    with tf.GradientTape(persistent=True) as tape:
        surrogate = _surrogate(logits, tf.constant(logits), advantages)
        logp = tf.reduce_sum(tf.nn.log_softmax(logits) * tf.one_hot([[0, 1]], 3), -1)
        plain = -tf.reduce_mean(logp * advantages)
    np.testing.assert_allclose(tape.gradient(surrogate.policy_gradient, logits), tape.gradient(plain, logits), atol=1e-6)
    assert float(surrogate.clip_fraction) == 0.0 and abs(float(surrogate.approx_kl)) < 1e-6


def test_surrogate_stops_pushing_a_ratio_past_the_clip() -> None:
    proximal = tf.constant([[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    # Action 0 at step 0 is now far more likely than under the proximal policy (ratio ~2.4 > 1.2).
    logits = tf.Variable([[[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    with tf.GradientTape() as tape:
        losses = _surrogate(logits, proximal, [[1.0, 0.0]])
    np.testing.assert_allclose(tape.gradient(losses.total, logits)[0, 0], 0.0, atol=1e-7)
    assert float(losses.clip_fraction) == 0.5  # one of the two steps is clipped
    assert float(losses.approx_kl) > 0.0
    with tf.GradientTape() as tape:  # a negative advantage is not clipped on this side: it still pulls down
        losses = _surrogate(logits, proximal, [[-1.0, 0.0]])
    assert float(tape.gradient(losses.total, logits)[0, 0, 0]) > 0.0


def test_targets_with_gae_match_the_gae_function_and_mask_phantom_steps() -> None:
    from aioseed.algos.gae import generalized_advantage_estimation

    common = dict(
        logits=tf.constant(LOGITS),
        values=tf.constant(VALUES),
        behaviour_logits=tf.constant(LOGITS),
        actions=tf.constant([[0], [1], [0]], tf.int32),
        rewards=tf.constant([[0.0], [1.0], [0.5]], tf.float32),
        done=tf.constant([[False], [False], [False]]),
        discount=GAMMA,
        lambda_=0.9,
    )
    result = targets(**common, phantom=tf.constant([[False], [False], [False]]), kind="gae")
    expected = generalized_advantage_estimation([[1.0], [0.5]], [[GAMMA], [GAMMA]], VALUES[:2], VALUES[1:], 0.9)
    np.testing.assert_allclose(result.advantages, expected.advantages, rtol=1e-6)
    np.testing.assert_allclose(result.value_targets, expected.returns, rtol=1e-6)
    phantom = targets(**common, phantom=tf.constant([[False], [True], [False]]), kind="gae")
    assert phantom.valid.numpy().tolist() == [[1.0], [0.0]] and float(phantom.advantages[1, 0]) == 0.0
    with pytest.raises(ValueError, match="unknown targets"):
        targets(**common, phantom=tf.constant([[False], [False], [False]]), kind="td")


def test_gae_targets_do_not_leak_a_truncated_episodes_phantom_row_into_the_step_before() -> None:
    """x_0 -> x_1 -> x_2, truncated there: x_2 (phantom) only bootstraps step 1, and x_3 starts a new episode.

    Step 1's advantage is its one-step TD error r + gamma V(x_2) - V(x_1); the phantom row's own
    delta (-V(x_2): no reward, no bootstrap) must not reach it through the recursion.
    """
    values = np.array([[0.5], [4.0], [-3.0], [2.0]], np.float32)
    result = targets(
        logits=tf.zeros([4, 1, 2]),
        values=tf.constant(values),
        behaviour_logits=tf.zeros([4, 1, 2]),
        actions=tf.zeros([4, 1], tf.int32),
        rewards=tf.constant([[0.0], [1.0], [2.0], [0.0]]),
        done=tf.constant([[False], [False], [False], [True]]),
        phantom=tf.constant([[False], [False], [True], [False]]),
        discount=GAMMA,
        kind="gae",
        lambda_=0.9,
    )
    a_1 = 2.0 + GAMMA * values[2, 0] - values[1, 0]
    a_0 = 1.0 + GAMMA * values[1, 0] - values[0, 0] + GAMMA * 0.9 * a_1
    np.testing.assert_allclose(result.advantages.numpy()[:, 0], [a_0, a_1, 0.0], rtol=1e-6)
    np.testing.assert_allclose(result.value_targets.numpy()[:2, 0], [a_0 + values[0, 0], a_1 + values[1, 0]], rtol=1e-6)


def test_on_policy_vtrace_targets_equal_the_loss_advantages() -> None:
    """The targets the reuse path computes once are those the one-pass loss uses."""
    common = dict(
        logits=tf.constant(LOGITS),
        values=tf.constant(VALUES),
        behaviour_logits=tf.constant(LOGITS),
        actions=tf.constant([[0], [1], [0]], tf.int32),
        rewards=tf.constant([[0.0], [1.0], [0.0]], tf.float32),
        done=tf.constant([[False], [False], [False]]),
        phantom=tf.constant([[False], [False], [False]]),
        discount=GAMMA,
    )
    result = targets(**common)
    losses = impala_loss(**common, baseline_cost=0.5, entropy_cost=0.0)
    expected_baseline = 0.5 * np.mean(np.square(result.value_targets.numpy() - VALUES[:2]))
    assert float(losses.baseline) == pytest.approx(expected_baseline, rel=1e-5)


def test_diagnostics_on_policy_and_a_perfect_value_fit() -> None:
    logits = tf.constant(LOGITS[:2])
    targets_ = tf.constant([[1.0], [3.0]])
    d = diagnostics(logits, targets_[:, 0:1], logits, tf.constant([[0], [1]]), targets_, tf.ones([2, 1]))
    assert float(d.kl_behaviour) == pytest.approx(0.0, abs=1e-7)
    assert float(d.rho_clipped_mean) == pytest.approx(1.0) and float(d.rho_below_half) == 0.0
    assert float(d.explained_variance) == pytest.approx(1.0)


def test_diagnostics_pinned_numbers_and_phantom_steps_left_out() -> None:
    """Behaviour uniform over 2 actions; pi(0) = 0.2 at step 0 and 0.9 at step 1; step 2 is a phantom."""
    behaviour = tf.zeros([3, 1, 2])
    p = np.array([0.2, 0.9, 0.5])
    logits = tf.constant(np.log(np.stack([p, 1 - p], -1))[:, None, :], tf.float32)
    values = tf.constant([[0.0], [0.0], [100.0]])
    value_targets = tf.constant([[1.0], [-1.0], [7.0]])
    d = diagnostics(logits, values, behaviour, tf.zeros([3, 1], tf.int32), value_targets, tf.constant([[1.0], [1.0], [0.0]]))
    rho = p[:2] / 0.5  # 0.4 and 1.8
    kl = np.mean([0.5 * np.log(0.5 / q) + 0.5 * np.log(0.5 / (1 - q)) for q in p[:2]])
    entropy = np.mean([-(q * np.log(q) + (1 - q) * np.log(1 - q)) for q in p[:2]])
    assert float(d.kl_behaviour) == pytest.approx(kl, rel=1e-5)
    assert float(d.rho_clipped_mean) == pytest.approx(np.mean(np.minimum(rho, 1.0)), rel=1e-6)
    assert float(d.rho_below_half) == pytest.approx(0.5)
    assert float(d.entropy) == pytest.approx(entropy, rel=1e-5)
    assert float(d.explained_variance) == pytest.approx(0.0, abs=1e-6)  # V = 0 = the targets' mean


def test_one_pass_loss_reports_the_diagnostics_of_its_batch() -> None:
    losses = _losses(done_1=False, phantom_1=False)
    assert float(losses.diagnostics.kl_behaviour) == pytest.approx(0.0, abs=1e-7)  # behaviour == target
    assert float(losses.diagnostics.rho_clipped_mean) == pytest.approx(1.0)
