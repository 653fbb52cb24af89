"""TD3's targets and policy loss (pure functions over tensors). Actions are the policy's, in [-1, 1] per
dimension (the env's box is an affine map of it); the transitions and the critics' loss are SAC's
(``aioseed.algos.sac.loss``)."""

from __future__ import annotations

import tensorflow as tf

from aioseed.algos.sac.loss import masked_mean


def smoothed_actions(actions: tf.Tensor, noise: tf.Tensor, noise_clip: float) -> tf.Tensor:
    """Target policy smoothing: ``clip(actions + clip(noise, -noise_clip, noise_clip), -1, 1)``."""
    return tf.clip_by_value(actions + tf.clip_by_value(noise, -noise_clip, noise_clip), -1.0, 1.0)


def clipped_double_q_targets(reward: tf.Tensor, discount: tf.Tensor, next_q1: tf.Tensor, next_q2: tf.Tensor) -> tf.Tensor:
    """<float32>[N] y = r + discount min(Q1', Q2')(x', a'), a' the smoothed target action (gradients stopped)."""
    return tf.stop_gradient(reward + discount * tf.minimum(next_q1, next_q2))


def actor_loss(q1: tf.Tensor, valid: tf.Tensor) -> tf.Tensor:
    """-E[Q1(x, pi(x))]: the deterministic policy gradient through the first critic."""
    return -masked_mean(q1, valid)
