"""n-step bootstrapped returns over time-major trajectories (R2D2, Kapturowski et al. 2019).

Pure functions over time-major tensors, written ``<dtype>[T, B]``. Row t of a
trajectory carries the reward and discount of the transition *into* t (the
done convention of the learner), so the n-step return from t sums rows
t + 1 ... t + n.
"""

from __future__ import annotations

import tensorflow as tf


def n_step_targets(
    r_t: tf.Tensor,
    discount_t: tf.Tensor,
    v_t: tf.Tensor,
    stop_t: tf.Tensor,
    n: int,
) -> tf.Tensor:
    """n-step bootstrapped returns G_t for t = 0 ... T - 2 of a [T, B] trajectory.

    G_t = sum_{k=1..e} (prod_{j=1..k-1} discount_{t+j}) r_{t+k} + (prod_{j=1..e} discount_{t+j}) v_{t+e}

    where the window e is n steps, shortened at the end of the trajectory and at
    the first ``stop`` row after t (an episode's final observation): a
    truncated episode bootstraps from its final observation, never across the
    reset. A termination sets ``discount`` to zero at its row, which cuts every
    later reward and the bootstrap.

    Args:
      r_t: <float32>[T, B] reward of the transition into row t (r_0 is unused).
      discount_t: <float32>[T, B] gamma, or 0 where the transition into row t ends an episode.
      v_t: <float32>[T, B] bootstrap values (for double Q-learning: Q_target(x_t, argmax_a Q(x_t, a))).
      stop_t: <bool>[T, B] row t is an episode's final observation: windows end there.
      n: the number of steps (>= 1).

    Returns:
      <float32>[T - 1, B] the targets G_0 ... G_{T-2}.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    for name, x in (("r_t", r_t), ("discount_t", discount_t), ("v_t", v_t), ("stop_t", stop_t)):
        if x.shape.rank != 2:
            raise ValueError(f"{name} must be [T, B], got shape {x.shape}")
    steps = tf.shape(r_t)[0] - 1  # targets computed

    def ahead(x: tf.Tensor, k: int) -> tf.Tensor:
        """Row t + k for t = 0 ... T - 2, padded with zeros past the end."""
        padded = tf.concat([x, tf.zeros(tf.concat([[n], tf.shape(x)[1:]], 0), x.dtype)], 0)
        return padded[k : k + steps]

    t = tf.range(steps)[:, None]
    last_row = tf.shape(r_t)[0] - 1
    returns = tf.zeros_like(r_t[:-1])
    scale = tf.ones_like(r_t[:-1])  # prod of discounts so far
    open_ = tf.ones_like(r_t[:-1], dtype=tf.bool)
    for k in range(1, n + 1):
        in_window = open_ & (t + k <= last_row)
        returns += tf.where(in_window, scale * ahead(r_t, k), 0.0)
        scale = tf.where(in_window, scale * ahead(discount_t, k), scale)
        closes = in_window & (ahead(stop_t, k) | (t + k == last_row) | (k == n))
        returns += tf.where(closes, scale * ahead(v_t, k), 0.0)
        open_ = in_window & ~closes
    return returns
