"""The IMPALA loss on time-major unrolls of T + 1 steps (pure functions).

Step t of an unroll holds observation x_t, the action a_t chosen from it and its
behaviour logits, plus the reward r_{t-1} and ``done_t`` of the transition that
led to it (SEED's layout). So the transition t -> t+1 has reward ``reward[t+1]``
and discount ``gamma * (1 - done[t+1])``. A ``phantom`` step (a truncated
episode's final observation, whose action never ran) only serves as the
bootstrap of the step before it: its importance weight is zero, so
v_s = V(x_s) there, and it is masked out of all three loss terms.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from aioseed.algos import vtrace


class ImpalaLosses(NamedTuple):
    total: tf.Tensor
    policy_gradient: tf.Tensor
    baseline: tf.Tensor
    entropy: tf.Tensor


def clip_rewards(rewards: tf.Tensor, mode: str) -> tf.Tensor:
    """<float32>[...] rewards clipped as configured ("none", "abs_one", "soft_asymmetric")."""
    if mode == "none":
        return rewards
    if mode == "abs_one":
        return tf.clip_by_value(rewards, -1.0, 1.0)
    if mode == "soft_asymmetric":
        squeezed = tf.tanh(rewards / 5.0) * 5.0
        return tf.where(rewards < 0, 0.3 * squeezed, squeezed)
    raise ValueError(f"unknown reward clipping {mode!r}")


def impala_loss(
    logits: tf.Tensor,
    values: tf.Tensor,
    behaviour_logits: tf.Tensor,
    actions: tf.Tensor,
    rewards: tf.Tensor,
    done: tf.Tensor,
    phantom: tf.Tensor,
    *,
    discount: float,
    baseline_cost: float,
    entropy_cost: float,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
    lambda_: float = 1.0,
) -> ImpalaLosses:
    """Policy gradient with V-trace advantages + baseline loss - entropy bonus.

    Args:
      logits: <float32>[T+1, B, A] target-policy logits (the learner's network).
      values: <float32>[T+1, B] V(x_t) from the learner's network.
      behaviour_logits: <float32>[T+1, B, A] logits that chose the actions.
      actions: <int32>[T+1, B] a_t.
      rewards: <float32>[T+1, B] reward leading to step t (already clipped).
      done: <bool>[T+1, B] the transition into step t crossed an episode end.
      phantom: <bool>[T+1, B] step t is a truncated episode's final observation.
    Returns:
      Scalar losses, averaged over the T x B steps.
    """
    valid = 1.0 - tf.cast(phantom[:-1], tf.float32)
    target = tf.nn.log_softmax(logits[:-1])
    behaviour = tf.nn.log_softmax(behaviour_logits[:-1])
    taken = tf.one_hot(actions[:-1], tf.shape(logits)[-1], dtype=tf.float32)
    target_logp = tf.reduce_sum(target * taken, -1)
    log_rhos = target_logp - tf.reduce_sum(behaviour * taken, -1)
    log_rhos = tf.where(valid > 0, log_rhos, tf.fill(tf.shape(log_rhos), float("-inf")))
    discounts = discount * (1.0 - tf.cast(done[1:], tf.float32))
    targets = vtrace.from_importance_weights(
        log_rhos=log_rhos,
        discounts=discounts,
        rewards=rewards[1:],
        values=values[:-1],
        bootstrap_value=values[-1],
        clip_rho_threshold=clip_rho_threshold,
        clip_pg_rho_threshold=clip_pg_rho_threshold,
        lambda_=lambda_,
    )
    count = tf.cast(tf.size(valid), tf.float32)
    pg = -tf.reduce_sum(target_logp * targets.pg_advantages * valid) / count
    baseline = 0.5 * tf.reduce_sum(tf.square(targets.vs - values[:-1]) * valid) / count
    entropy = -tf.reduce_sum(tf.exp(target) * target, -1)
    entropy_loss = -tf.reduce_sum(entropy * valid) / count
    total = pg + baseline_cost * baseline + entropy_cost * entropy_loss
    return ImpalaLosses(total=total, policy_gradient=pg, baseline=baseline, entropy=entropy_loss)
