"""The R2D2 loss on the learning part of an unroll (after burn-in), time-major, pure.

Row t holds x_t, the action a_t taken there, and the reward and ``done`` of the
transition into t (the learner's layout, as in the IMPALA loss). A ``phantom``
row is an episode's final observation: its action never ran, so it gets no TD
error, and n-step windows end there (a truncation bootstraps from it; a
termination's ``done`` zeroes the bootstrap).
"""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from aioseed.algos.n_step import n_step_targets
from aioseed.algos.value_rescaling import inverse_value_rescale, value_rescale


class R2D2Losses(NamedTuple):
    total: tf.Tensor
    """<float32>[] importance-weighted mean over the batch of the sequences' squared-TD losses."""
    td: tf.Tensor
    """<float32>[T, B] TD errors in rescaled space (0 at phantom rows)."""
    priorities: tf.Tensor
    """<float32>[B] eta max|td| + (1 - eta) mean|td| per sequence."""


def dueling_q(advantages: tf.Tensor, value: tf.Tensor) -> tf.Tensor:
    """Q = V + A - mean_a A (Wang et al. 2016, eq. 9): <float32>[..., A] and [...] -> [..., A]."""
    return value[..., None] + advantages - tf.reduce_mean(advantages, -1, keepdims=True)


def r2d2_loss(
    q: tf.Tensor,
    target_q: tf.Tensor,
    actions: tf.Tensor,
    rewards: tf.Tensor,
    done: tf.Tensor,
    phantom: tf.Tensor,
    importance_weights: tf.Tensor,
    discount: float,
    n_steps: int,
    eps: float = 1e-3,
    priority_eta: float = 0.9,
    reduction: str = "sum",
) -> R2D2Losses:
    """Double-Q n-step loss with value rescaling (R2D2, section 2 and 3).

    Args:
      q: <float32>[T + 1, B, A] online-network Q values (rescaled space).
      target_q: <float32>[T + 1, B, A] target-network Q values.
      actions: <int32>[T + 1, B] actions taken.
      rewards: <float32>[T + 1, B] reward of the transition into each row (clipped as configured).
      done: <bool>[T + 1, B] the transition into the row ends an episode (zero discount).
      phantom: <bool>[T + 1, B] the row is an episode's final observation.
      importance_weights: <float32>[B] prioritized-replay weights.
      discount: gamma.
      n_steps: n.
      eps: value-rescaling eps.
      priority_eta: eta of the priorities.
      reduction: a sequence's loss is half the sum of its squared TD errors (SEED's), or their mean ("mean").
    """
    if reduction not in ("sum", "mean"):
        raise ValueError(f"unknown reduction {reduction!r}; known: sum, mean")
    q_taken = tf.gather(q, actions, batch_dims=2)
    # Double Q: the online network picks the bootstrap action, the target network values it.
    best = tf.argmax(q, -1, output_type=tf.int32)
    td, priorities, rows = _td_errors(
        q_taken, tf.gather(target_q, best, batch_dims=2), rewards, done, phantom, discount, n_steps, eps, priority_eta
    )
    sequence_loss = 0.5 * tf.reduce_sum(tf.square(td), 0)
    if reduction == "mean":
        sequence_loss /= rows
    return R2D2Losses(
        total=tf.reduce_mean(importance_weights * sequence_loss), td=td, priorities=tf.stop_gradient(priorities)
    )


def inference_priorities(
    q_taken: tf.Tensor,
    rewards: tf.Tensor,
    done: tf.Tensor,
    phantom: tf.Tensor,
    discount: float,
    n_steps: int,
    eps: float = 1e-3,
    priority_eta: float = 0.9,
) -> tf.Tensor:
    """<float32>[B] new unrolls' priorities from the Q values inference acted with (SEED's initial priorities):
    the n-step targets bootstrap from the Q of the actions taken, no target network.

    Args:
      q_taken: <float32>[T + 1, B] Q(x_t, a_t) of the action taken (rescaled space), as inference computed it.
      rewards, done, phantom: <[T + 1, B]> as in ``r2d2_loss``.
      discount, n_steps, eps, priority_eta: as in ``r2d2_loss``.
    """
    return _td_errors(q_taken, q_taken, rewards, done, phantom, discount, n_steps, eps, priority_eta)[1]


def _td_errors(
    q_taken: tf.Tensor,
    bootstrap_q: tf.Tensor,
    rewards: tf.Tensor,
    done: tf.Tensor,
    phantom: tf.Tensor,
    discount: float,
    n_steps: int,
    eps: float,
    priority_eta: float,
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """TD errors <float32>[T, B] of ``q_taken`` against n-step targets bootstrapped from ``bootstrap_q`` (both
    [T + 1, B], rescaled space; 0 at phantom rows), the sequences' priorities [B] and their learned rows [B]."""
    bootstrap = inverse_value_rescale(bootstrap_q, eps)
    discounts = discount * (1.0 - tf.cast(done, tf.float32))
    returns = n_step_targets(tf.cast(rewards, tf.float32), discounts, bootstrap, phantom, n_steps)
    targets = tf.stop_gradient(value_rescale(returns, eps))
    mask = 1.0 - tf.cast(phantom[:-1], tf.float32)
    td = (targets - q_taken[:-1]) * mask
    rows = tf.maximum(tf.reduce_sum(mask, 0), 1.0)
    magnitude = tf.abs(td)
    priorities = priority_eta * tf.reduce_max(magnitude, 0) + (1.0 - priority_eta) * tf.reduce_sum(magnitude, 0) / rows
    return td, priorities, rows
