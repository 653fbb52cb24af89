"""The previous action and reward as a recurrent core's extra inputs (IMPALA's and SEED's recurrent nets).

At inference the learner keeps each env's previous action as recurrent state (zero where an episode starts)
and hands the policy the reward that led to each row (also zero there). Training rebuilds the same inputs for
every step of an unroll from the state stored with its first step, its actions and its rewards.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

PREVIOUS_ACTION = "prev_action"
"""State column of the previous action's features (one-hot for discrete actions); zero at an episode's start."""


def state_columns(core: Mapping[str, tuple[int, ...]], previous_action_size: int | None) -> dict[str, tuple[tuple[int, ...], Any]]:
    """The per-env state columns (shape, dtype) a learner keeps: the core's, then the previous action's features
    where they are an input (``previous_action_size``; None: they are not)."""
    columns: dict[str, tuple[tuple[int, ...], Any]] = {name: (shape, np.float32) for name, shape in core.items()}
    if previous_action_size is not None:
        columns[PREVIOUS_ACTION] = ((previous_action_size,), np.float32)
    return columns


def step_extras(previous_action: tf.Tensor, reward: tf.Tensor) -> tf.Tensor:
    """<float32>[..., F] previous action's features and <float32>[...] reward -> <float32>[..., F + 1]."""
    return tf.concat([previous_action, tf.cast(reward, tf.float32)[..., None]], -1)


def unroll_extras(
    first_previous_action: tf.Tensor,
    actions: tf.Tensor,
    rewards: tf.Tensor,
    starts: tf.Tensor,
    features: Callable[[tf.Tensor], tf.Tensor],
) -> tf.Tensor:
    """The inference-time extras of every step of ``[T + 1, B]`` unrolls.

    Args:
      first_previous_action: <float32>[B, F] the previous action's features stored with each unroll's first step.
      actions: [T + 1, B, ...] a_t as stored.
      rewards: <float32>[T + 1, B] the (clipped) reward leading to step t.
      starts: <bool>[T + 1, B] an episode starts at step t: previous action and reward are zero there.
      features: turns actions into their features (one-hot for discrete actions).
    """
    previous = tf.concat([first_previous_action[None], features(actions[:-1])], 0)
    keep = 1.0 - tf.cast(starts, tf.float32)
    # Step 0's stored previous action was already zeroed at inference where it started an episode.
    previous = previous * tf.concat([tf.ones_like(keep[:1]), keep[1:]], 0)[..., None]
    return step_extras(previous, rewards * keep)
