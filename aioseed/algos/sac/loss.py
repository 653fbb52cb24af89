"""SAC's losses on a batch of transitions (pure functions over tensors).

Actions enter the Q networks squashed to [-1, 1] (``tanh(u)`` of the pre-squash sample ``u``), whatever
the env's box: the affine map into the box is the same for every action, so it changes neither the Q
function's information nor the policy's gradient.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


class Transitions(NamedTuple):
    """N transitions (x, a, r, x') flattened from ``[T + 1, B]`` unrolls (``transitions``)."""

    observation: tf.Tensor
    """[N, ...] x_t."""
    action: tf.Tensor
    """<float32>[N, A] the pre-squash sample u_t that ran."""
    reward: tf.Tensor
    """<float32>[N] r_t."""
    discount: tf.Tensor
    """<float32>[N] gamma, or 0 where x_{t+1} starts a new episode (the transition ended one by termination)."""
    next_observation: tf.Tensor
    """[N, ...] x_{t+1}."""
    valid: tf.Tensor
    """<float32>[N] 0 where x_t is a truncated episode's final observation (its action never ran)."""


def _merge(x: tf.Tensor) -> tf.Tensor:
    shape = tf.shape(x)
    return tf.reshape(x, tf.concat([[shape[0] * shape[1]], shape[2:]], 0))


def transitions(
    observation: tf.Tensor, action: tf.Tensor, reward: tf.Tensor, done: tf.Tensor, phantom: tf.Tensor, discount: float
) -> Transitions:
    """The T x B transitions of time-major ``[T + 1, B]`` unrolls in SEED's layout: step t holds x_t and a_t,
    and the reward and ``done`` of the transition that led to it (``aioseed.algos.impala.loss``)."""
    return Transitions(
        observation=_merge(observation[:-1]),
        action=_merge(tf.cast(action[:-1], tf.float32)),
        reward=_merge(tf.cast(reward[1:], tf.float32)),
        discount=_merge(discount * (1.0 - tf.cast(done[1:], tf.float32))),
        next_observation=_merge(observation[1:]),
        valid=_merge(1.0 - tf.cast(phantom[:-1], tf.float32)),
    )


def masked_mean(x: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(x * valid) / tf.maximum(tf.reduce_sum(valid), 1.0)


def soft_targets(
    reward: tf.Tensor, discount: tf.Tensor, next_q1: tf.Tensor, next_q2: tf.Tensor, next_log_prob: tf.Tensor, alpha: tf.Tensor
) -> tf.Tensor:
    """<float32>[N] y = r + discount (min(Q1', Q2')(x', a') - alpha log pi(a' | x')), a' ~ pi(x') (gradients stopped)."""
    return tf.stop_gradient(reward + discount * (tf.minimum(next_q1, next_q2) - alpha * next_log_prob))


def critic_loss(q1: tf.Tensor, q2: tf.Tensor, targets: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    """Both Q networks' mean squared errors to the soft targets, summed (CleanRL's qf_loss)."""
    return masked_mean(tf.square(q1 - targets), valid) + masked_mean(tf.square(q2 - targets), valid)


def actor_loss(log_prob: tf.Tensor, q1: tf.Tensor, q2: tf.Tensor, alpha: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    """E[alpha log pi(a | x) - min(Q1, Q2)(x, a)] for reparameterised a ~ pi(x)."""
    return masked_mean(alpha * log_prob - tf.minimum(q1, q2), valid)


def temperature_loss(log_alpha: tf.Tensor, log_prob: tf.Tensor, target_entropy: float, valid: tf.Tensor) -> tf.Tensor:
    """-alpha E[log pi(a | x) + target entropy], learned through log(alpha) (CleanRL's form: the step on log(alpha)
    scales with alpha). Alpha rises while the entropy is below target, falls above it."""
    return -tf.exp(log_alpha) * masked_mean(tf.stop_gradient(log_prob + target_entropy), valid)


def polyak(targets: list[tf.Variable], sources: list[tf.Variable], tau: float) -> None:
    """target <- tau source + (1 - tau) target, variable by variable."""
    for target, source in zip(targets, sources, strict=True):
        target.assign(tau * source + (1.0 - tau) * target)
