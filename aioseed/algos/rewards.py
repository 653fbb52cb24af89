"""Reward clipping (pure): the transforms IMPALA, R2D2 and SEED apply to rewards before any target."""

from __future__ import annotations

import tensorflow as tf


def clip_rewards(rewards: tf.Tensor, mode: str, threshold: float = 1.0) -> tf.Tensor:
    """<float32>[...] rewards clipped as configured: "none"; "abs" to [-threshold, threshold];
    "soft_asymmetric" (SEED's 5 tanh(r / 5), negatives scaled by 0.3)."""
    if mode == "none":
        return rewards
    if mode == "abs":
        return tf.clip_by_value(rewards, -threshold, threshold)
    if mode == "soft_asymmetric":
        squeezed = tf.tanh(rewards / 5.0) * 5.0
        return tf.where(rewards < 0, 0.3 * squeezed, squeezed)
    raise ValueError(f"unknown reward clipping {mode!r}")
