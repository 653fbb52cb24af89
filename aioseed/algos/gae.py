"""Generalized advantage estimation (Schulman et al. 2016, "High-Dimensional Continuous Control Using
Generalized Advantage Estimation", eq. 16). Pure functions over time-major tensors."""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf


class GAEReturns(NamedTuple):
    advantages: tf.Tensor
    """<float32>[T, B] A_t = sum_l (gamma lambda)^l delta_{t+l}, cut where the discount is zero."""
    returns: tf.Tensor
    """<float32>[T, B] value targets A_t + V(x_t) (the lambda-returns)."""


def generalized_advantage_estimation(
    r_t: tf.Tensor,
    discount_t: tf.Tensor,
    v_tm1: tf.Tensor,
    v_t: tf.Tensor,
    lambda_: float = 0.95,
    valid_t: tf.Tensor | None = None,
) -> GAEReturns:
    """GAE(gamma, lambda) advantages and lambda-returns, with gradients stopped.

    Row s of every argument is the transition x_{t-1} -> x_t (rlax's naming, as ``vtrace``).

    Args:
      r_t: <float32>[T, B] reward of the transition.
      discount_t: <float32>[T, B] gamma applied to V(x_t); 0 where the episode terminated.
      v_tm1: <float32>[T, B] V(x_{t-1}).
      v_t: <float32>[T, B] V(x_t) (v_tm1 shifted by one, then the bootstrap value).
      lambda_: mixes n-step estimates (0: one-step TD error; 1: Monte Carlo minus V(x_{t-1})).
      valid_t: <float32>[T, B] 0 where x_{t-1} is no real step (a truncated episode's final observation,
        kept only as the bootstrap of the step before it): its delta is zeroed before the recursion, so
        it adds nothing to the earlier steps' advantages. None: every step is real.
    """
    r_t, discount_t, v_tm1, v_t = (tf.convert_to_tensor(x, tf.float32) for x in (r_t, discount_t, v_tm1, v_t))
    r_t.shape.assert_has_rank(2)
    for x in (discount_t, v_tm1, v_t):
        x.shape.assert_is_compatible_with(r_t.shape)
    delta_tm1 = r_t + discount_t * v_t - v_tm1
    if valid_t is not None:
        delta_tm1 = delta_tm1 * tf.convert_to_tensor(valid_t, tf.float32)

    # A_t = delta_t + gamma_t lambda A_{t+1}, computed backwards.
    def backward(acc: tf.Tensor, inputs: tuple[tf.Tensor, tf.Tensor]) -> tf.Tensor:
        discount, delta = inputs
        return delta + discount * lambda_ * acc

    advantages = tf.scan(backward, (discount_t, delta_tm1), initializer=tf.zeros_like(v_t[-1]), reverse=True)
    return GAEReturns(advantages=tf.stop_gradient(advantages), returns=tf.stop_gradient(advantages + v_tm1))
