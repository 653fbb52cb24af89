"""The tanh-squashed diagonal Gaussian: continuous actions in a box (SEED RL's normal-tanh policy head, and
SAC's). Pure functions over tensors.

A policy outputs ``mean`` and ``log_std`` per action dimension. An action is drawn as
``u ~ N(mean, exp(log_std))`` and squashed into the box ``[low, high]``:
``a = low + (tanh(u) + 1) / 2 * (high - low)``. Its log-density is the Gaussian's at ``u`` minus the
log-Jacobian of the squash, summed over the action dimensions:

    log pi(a) = sum_i [ log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2) - log((high_i - low_i) / 2) ]

with ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))``, which stays finite however large ``|u|``
is (the direct form is ``log(0)`` once tanh(u) rounds to +-1 in float32, at |u| > ~9). The learner keeps
``u`` (the pre-squash sample) in its trajectories, never inverting ``a``: atanh at the box's edges is
infinite, so a log-probability computed from ``a`` would not be.
"""

from __future__ import annotations

import math

import tensorflow as tf

LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


def squash(u: tf.Tensor, low: tf.Tensor, high: tf.Tensor) -> tf.Tensor:
    """<float32>[..., A] the action in ``[low, high]`` for the pre-squash sample ``u[..., A]``."""
    return low + (tf.tanh(u) + 1.0) * 0.5 * (high - low)


def log_det_jacobian(u: tf.Tensor, low: tf.Tensor, high: tf.Tensor, epsilon: float = 0.0) -> tf.Tensor:
    """<float32>[...] sum over the action dimensions of log |d squash / d u|, finite for any ``u``.

    ``epsilon`` > 0: CleanRL's ``log(scale (1 - tanh(u)^2) + epsilon)`` instead, which caps what a saturated
    action costs at ``-log(epsilon)`` per dimension."""
    if epsilon > 0.0:
        return tf.reduce_sum(tf.math.log((high - low) * 0.5 * (1.0 - tf.square(tf.tanh(u))) + epsilon), axis=-1)
    log_one_minus_tanh_sq = 2.0 * (math.log(2.0) - u - tf.math.softplus(-2.0 * u))
    return tf.reduce_sum(log_one_minus_tanh_sq + tf.math.log((high - low) * 0.5), axis=-1)


def gaussian_log_prob(u: tf.Tensor, mean: tf.Tensor, log_std: tf.Tensor) -> tf.Tensor:
    """<float32>[...] log N(u; mean, exp(log_std)) summed over the action dimensions (before the squash)."""
    z = (u - mean) * tf.exp(-log_std)
    return tf.reduce_sum(-0.5 * tf.square(z) - log_std - LOG_SQRT_2PI, axis=-1)


def log_prob(
    u: tf.Tensor, mean: tf.Tensor, log_std: tf.Tensor, low: tf.Tensor, high: tf.Tensor, epsilon: float = 0.0
) -> tf.Tensor:
    """<float32>[...] log pi(a) of the squashed action ``a = squash(u)``, given its pre-squash sample ``u``
    (``epsilon``: ``log_det_jacobian``'s)."""
    return gaussian_log_prob(u, mean, log_std) - log_det_jacobian(u, low, high, epsilon)


def squashed_log_std(raw: tf.Tensor, low: float, high: float) -> tf.Tensor:
    """``raw`` mapped smoothly into [low, high] by a rescaled tanh (CleanRL's SAC), instead of clipped."""
    return low + 0.5 * (high - low) * (tf.tanh(raw) + 1.0)


def sample(mean: tf.Tensor, log_std: tf.Tensor, seed: tf.Tensor | None = None) -> tf.Tensor:
    """<float32>[..., A] a pre-squash sample ``u ~ N(mean, exp(log_std))`` (stateless when ``seed``, a
    shape-[2] int tensor, is given)."""
    shape = tf.shape(mean)
    noise = tf.random.normal(shape) if seed is None else tf.random.stateless_normal(shape, seed)
    return mean + tf.exp(log_std) * noise


def gaussian_entropy(log_std: tf.Tensor) -> tf.Tensor:
    """<float32>[...] the entropy of the pre-squash Gaussian, summed over the action dimensions (the squashed
    distribution's has no closed form; PPO-style losses regularise this one, SAC uses ``-log_prob``)."""
    return tf.reduce_sum(log_std + 0.5 + LOG_SQRT_2PI, axis=-1)
