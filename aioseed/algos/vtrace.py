"""V-trace off-policy targets (Espeholt et al. 2018, "IMPALA", section 4.1).

Pure functions over time-major tensors. Shapes are written ``<dtype>[T, B]``:
``T`` steps of ``B`` independent trajectories.
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


class VTraceReturns(NamedTuple):
    vs: tf.Tensor
    """<float32>[T, B] V-trace value targets v_s (eq. 1)."""
    pg_advantages: tf.Tensor
    """<float32>[T, B] policy-gradient advantages rho_s (r_s + gamma v_{s+1} - V(x_s)) (sec. 4.2)."""


def from_importance_weights(
    log_rhos: tf.Tensor,
    discounts: tf.Tensor,
    rewards: tf.Tensor,
    values: tf.Tensor,
    bootstrap_value: tf.Tensor,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    lambda_: float = 1.0,
) -> VTraceReturns:
    """V-trace targets and advantages from log importance weights.

    Args:
      log_rhos: <float32>[T, B] log(pi(a_s|x_s) / mu(a_s|x_s)) for the action taken at s.
      discounts: <float32>[T, B] discount gamma_s applied to v_{s+1}; 0 at a terminal step.
      rewards: <float32>[T, B] reward r_s received after a_s.
      values: <float32>[T, B] V(x_s) under the target policy's baseline.
      bootstrap_value: <float32>[B] V(x_T).
      clip_rho_threshold: rho-bar in eq. 1 (None disables clipping).
      clip_pg_rho_threshold: rho-bar used for the policy-gradient advantages.
      lambda_: mixes the trace cut c_s = lambda * min(1, rho_s) (remark 2 of section 4.1).

    Returns:
      VTraceReturns with gradients stopped.
    """
    log_rhos = tf.convert_to_tensor(log_rhos, tf.float32)
    discounts = tf.convert_to_tensor(discounts, tf.float32)
    rewards = tf.convert_to_tensor(rewards, tf.float32)
    values = tf.convert_to_tensor(values, tf.float32)
    bootstrap_value = tf.convert_to_tensor(bootstrap_value, tf.float32)
    log_rhos.shape.assert_has_rank(2)
    discounts.shape.assert_is_compatible_with(log_rhos.shape)
    rewards.shape.assert_is_compatible_with(log_rhos.shape)
    values.shape.assert_is_compatible_with(log_rhos.shape)
    bootstrap_value.shape.assert_is_compatible_with(log_rhos.shape[1:])

    rhos = tf.exp(log_rhos)
    clipped_rhos = rhos if clip_rho_threshold is None else tf.minimum(clip_rho_threshold, rhos)
    cs = lambda_ * tf.minimum(1.0, rhos)
    v_tp1 = tf.concat([values[1:], bootstrap_value[tf.newaxis]], axis=0)
    deltas = clipped_rhos * (rewards + discounts * v_tp1 - values)

    # v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})), computed backwards.
    def backward(acc: tf.Tensor, inputs: tuple[tf.Tensor, tf.Tensor, tf.Tensor]) -> tf.Tensor:
        discount_t, c_t, delta_t = inputs
        return delta_t + discount_t * c_t * acc

    vs_minus_v = tf.scan(
        backward,
        (discounts, cs, deltas),
        initializer=tf.zeros_like(bootstrap_value),
        reverse=True,
    )
    vs = vs_minus_v + values
    vs_tp1 = tf.concat([vs[1:], bootstrap_value[tf.newaxis]], axis=0)
    clipped_pg_rhos = rhos if clip_pg_rho_threshold is None else tf.minimum(clip_pg_rho_threshold, rhos)
    pg_advantages = clipped_pg_rhos * (rewards + discounts * vs_tp1 - values)
    return VTraceReturns(vs=tf.stop_gradient(vs), pg_advantages=tf.stop_gradient(pg_advantages))
