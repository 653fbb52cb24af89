"""V-trace off-policy targets (Espeholt et al. 2018, "IMPALA", section 4.1).

Pure functions over time-major tensors. Shapes are written ``<dtype>[T, B]``:
``T`` transitions of ``B`` independent trajectories; arguments are named as in
rlax (``v_tm1``, ``r_t``, ``discount_t``).
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
    v_tm1: tf.Tensor,
    v_t: tf.Tensor,
    r_t: tf.Tensor,
    discount_t: tf.Tensor,
    log_rho_tm1: tf.Tensor,
    clip_rho_threshold: float | None = 1.0,
    clip_pg_rho_threshold: float | None = 1.0,
    lambda_: float = 1.0,
) -> VTraceReturns:
    """V-trace targets and advantages from log importance weights.

    Index t - 1 -> t is one transition (rlax's naming): from state x_{t-1} the behaviour policy
    took a_{t-1}, then r_t and discount_t came with x_t. Row s of every argument is transition s.

    Args:
      v_tm1: <float32>[T, B] V(x_{t-1}), the baseline of the state each transition leaves.
      v_t: <float32>[T, B] V(x_t), of the state it reaches (v_tm1 shifted by one, then the bootstrap).
      r_t: <float32>[T, B] reward of the transition.
      discount_t: <float32>[T, B] gamma applied to what follows x_t; 0 where the episode terminated.
      log_rho_tm1: <float32>[T, B] log(pi(a_{t-1}|x_{t-1}) / mu(a_{t-1}|x_{t-1})).
      clip_rho_threshold: rho-bar in eq. 1 (None disables clipping).
      clip_pg_rho_threshold: rho-bar used for the policy-gradient advantages.
      lambda_: mixes the trace cut c = lambda * min(1, rho) (remark 2 of section 4.1).

    Returns:
      VTraceReturns with gradients stopped.
    """
    v_tm1, v_t, r_t, discount_t, log_rho_tm1 = (
        tf.convert_to_tensor(x, tf.float32) for x in (v_tm1, v_t, r_t, discount_t, log_rho_tm1)
    )
    log_rho_tm1.shape.assert_has_rank(2)
    for x in (v_tm1, v_t, r_t, discount_t):
        x.shape.assert_is_compatible_with(log_rho_tm1.shape)

    rho_tm1 = tf.exp(log_rho_tm1)
    clipped_rho_tm1 = rho_tm1 if clip_rho_threshold is None else tf.minimum(clip_rho_threshold, rho_tm1)
    c_tm1 = lambda_ * tf.minimum(1.0, rho_tm1)
    delta_tm1 = clipped_rho_tm1 * (r_t + discount_t * v_t - v_tm1)

    # v_s - V(x_s) = delta_s + gamma_s c_s (v_{s+1} - V(x_{s+1})), computed backwards.
    def backward(acc: tf.Tensor, inputs: tuple[tf.Tensor, tf.Tensor, tf.Tensor]) -> tf.Tensor:
        discount, c, delta = inputs
        return delta + discount * c * acc

    vs_minus_v = tf.scan(backward, (discount_t, c_tm1, delta_tm1), initializer=tf.zeros_like(v_t[-1]), reverse=True)
    vs = vs_minus_v + v_tm1
    vs_t = tf.concat([vs[1:], v_t[-1:]], axis=0)  # v-trace targets of x_t, the bootstrap value last
    clipped_pg_rho_tm1 = rho_tm1 if clip_pg_rho_threshold is None else tf.minimum(clip_pg_rho_threshold, rho_tm1)
    pg_advantages = clipped_pg_rho_tm1 * (r_t + discount_t * vs_t - v_tm1)
    return VTraceReturns(vs=tf.stop_gradient(vs), pg_advantages=tf.stop_gradient(pg_advantages))
