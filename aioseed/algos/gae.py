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
    rewards: tf.Tensor,
    discounts: tf.Tensor,
    values: tf.Tensor,
    bootstrap_value: tf.Tensor,
    lambda_: float = 0.95,
) -> GAEReturns:
    """GAE(gamma, lambda) advantages and lambda-returns, with gradients stopped.

    Args:
      rewards: <float32>[T, B] r_t received after the action at t.
      discounts: <float32>[T, B] gamma_t applied to V(x_{t+1}); 0 where the episode terminated.
      values: <float32>[T, B] V(x_t).
      bootstrap_value: <float32>[B] V(x_T).
      lambda_: mixes n-step estimates (0: one-step TD error; 1: Monte Carlo minus V(x_t)).
    """
    rewards = tf.convert_to_tensor(rewards, tf.float32)
    discounts = tf.convert_to_tensor(discounts, tf.float32)
    values = tf.convert_to_tensor(values, tf.float32)
    bootstrap_value = tf.convert_to_tensor(bootstrap_value, tf.float32)
    rewards.shape.assert_has_rank(2)
    discounts.shape.assert_is_compatible_with(rewards.shape)
    values.shape.assert_is_compatible_with(rewards.shape)
    bootstrap_value.shape.assert_is_compatible_with(rewards.shape[1:])

    v_tp1 = tf.concat([values[1:], bootstrap_value[tf.newaxis]], axis=0)
    deltas = rewards + discounts * v_tp1 - values

    # A_t = delta_t + gamma_t lambda A_{t+1}, computed backwards.
    def backward(acc: tf.Tensor, inputs: tuple[tf.Tensor, tf.Tensor]) -> tf.Tensor:
        discount_t, delta_t = inputs
        return delta_t + discount_t * lambda_ * acc

    advantages = tf.scan(backward, (discounts, deltas), initializer=tf.zeros_like(bootstrap_value), reverse=True)
    return GAEReturns(advantages=tf.stop_gradient(advantages), returns=tf.stop_gradient(advantages + values))
