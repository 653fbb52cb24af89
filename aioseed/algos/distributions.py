"""Action distributions of the policy-gradient agents, one per action space (``aioseed.action_space``).

A policy head outputs a distribution's parameters, ``<float32>[..., params_size]`` (kept in unrolls as
the ``logits`` column, whatever the distribution). The math is pure TensorFlow over those parameters
and the stored actions, so the V-trace and PPO losses read the same for every space:

- ``Categorical``: logits; actions <int32>[...].
- ``MultiCategorical``: the logits of independent categoricals, concatenated; actions <int32>[..., N].
- ``TanhGaussian``: ``[mean, log_std]`` of a diagonal Gaussian; the stored action is the pre-squash
  sample ``u`` <float32>[..., A] and the env runs ``squash(u)`` in the box (``aioseed.algos.tanh_gaussian``).
  Its log-probabilities carry the tanh correction. In an importance ratio pi(a) / mu(a) of the same ``u``
  the correction cancels, and the entropy bonus and the KL diagnostic are the pre-squash Gaussian's
  (closed forms; the squashed distribution's have none).
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

import numpy as np
import tensorflow as tf

from aioseed.action_space import LOG_STD_MAX, LOG_STD_MIN, ActionSpace, Box, Discrete, MultiDiscrete
from aioseed.algos import tanh_gaussian
from aioseed.types import Column


class Distribution(Protocol):
    params_size: int
    """Width of the policy head's output."""
    feature_size: int
    """Width of ``features``, an action as a network input (the previous action)."""

    def action_column(self) -> Column:
        """The stored action of one row: (shape, NumPy dtype)."""
        ...

    def sample(self, params: tf.Tensor) -> tf.Tensor:
        """Actions drawn for ``[B, params_size]`` rows."""
        ...

    def mode(self, params: tf.Tensor) -> tf.Tensor:
        """The most likely action of each ``[B, params_size]`` row (greedy evaluation)."""
        ...

    def env_action(self, actions: tf.Tensor) -> tf.Tensor:
        """What the env runs for stored ``actions``."""
        ...

    def log_prob(self, params: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        """<float32>[...] log pi(a | params)."""
        ...

    def entropy(self, params: tf.Tensor) -> tf.Tensor:
        """<float32>[...] the entropy the losses' bonus raises."""
        ...

    def kl(self, p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
        """<float32>[...] KL(p || q) between two parameter tensors of the same shape."""
        ...

    def features(self, actions: tf.Tensor) -> tf.Tensor:
        """<float32>[..., feature_size] an action as a network input."""
        ...


def _categorical_log_prob(logits: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
    return tf.reduce_sum(tf.nn.log_softmax(logits) * tf.one_hot(actions, tf.shape(logits)[-1], dtype=tf.float32), -1)


def _categorical_entropy(logits: tf.Tensor) -> tf.Tensor:
    log_policy = tf.nn.log_softmax(logits)
    return -tf.reduce_sum(tf.exp(log_policy) * log_policy, -1)


def _categorical_kl(p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
    log_p, log_q = tf.nn.log_softmax(p), tf.nn.log_softmax(q)
    return tf.reduce_sum(tf.exp(log_p) * (log_p - log_q), -1)


@dataclasses.dataclass(frozen=True)
class Categorical:
    """Softmax over ``n`` logits (its math reads n from the logits; ``n`` sizes the head and ``features``)."""

    n: int = 0

    @property
    def params_size(self) -> int:
        return self.n

    @property
    def feature_size(self) -> int:
        return self.n

    def action_column(self) -> Column:
        return (), np.int32

    def sample(self, params: tf.Tensor) -> tf.Tensor:
        return tf.random.categorical(params, 1, dtype=tf.int32)[:, 0]

    def mode(self, params: tf.Tensor) -> tf.Tensor:
        return tf.argmax(params, -1, output_type=tf.int32)

    def env_action(self, actions: tf.Tensor) -> tf.Tensor:
        return actions

    def log_prob(self, params: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        return _categorical_log_prob(params, actions)

    def entropy(self, params: tf.Tensor) -> tf.Tensor:
        return _categorical_entropy(params)

    def kl(self, p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
        return _categorical_kl(p, q)

    def features(self, actions: tf.Tensor) -> tf.Tensor:
        return tf.one_hot(actions, self.n, dtype=tf.float32)


@dataclasses.dataclass(frozen=True)
class MultiCategorical:
    """Independent categoricals of sizes ``nvec``: log-probabilities, entropies and KLs add up."""

    nvec: tuple[int, ...]

    @property
    def params_size(self) -> int:
        return sum(self.nvec)

    @property
    def feature_size(self) -> int:
        return sum(self.nvec)

    def action_column(self) -> Column:
        return (len(self.nvec),), np.int32

    def _split(self, params: tf.Tensor) -> list[tf.Tensor]:
        return tf.split(params, list(self.nvec), axis=-1)

    def sample(self, params: tf.Tensor) -> tf.Tensor:
        return tf.stack([tf.random.categorical(p, 1, dtype=tf.int32)[:, 0] for p in self._split(params)], -1)

    def mode(self, params: tf.Tensor) -> tf.Tensor:
        return tf.stack([tf.argmax(p, -1, output_type=tf.int32) for p in self._split(params)], -1)

    def env_action(self, actions: tf.Tensor) -> tf.Tensor:
        return actions

    def log_prob(self, params: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        return tf.add_n([_categorical_log_prob(p, actions[..., i]) for i, p in enumerate(self._split(params))])

    def entropy(self, params: tf.Tensor) -> tf.Tensor:
        return tf.add_n([_categorical_entropy(p) for p in self._split(params)])

    def kl(self, p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
        return tf.add_n([_categorical_kl(a, b) for a, b in zip(self._split(p), self._split(q))])

    def features(self, actions: tf.Tensor) -> tf.Tensor:
        return tf.concat([tf.one_hot(actions[..., i], n, dtype=tf.float32) for i, n in enumerate(self.nvec)], -1)


@dataclasses.dataclass(frozen=True)
class TanhGaussian:
    """A diagonal Gaussian over ``size`` pre-squash dimensions, squashed by tanh into ``[low, high]``."""

    size: int
    low: tuple[float, ...]
    high: tuple[float, ...]
    log_prob_epsilon: float = 0.0
    """``aioseed.algos.tanh_gaussian.log_det_jacobian``'s epsilon (0: the exact correction)."""

    @property
    def params_size(self) -> int:
        return 2 * self.size

    @property
    def feature_size(self) -> int:
        return self.size

    def action_column(self) -> Column:
        return (self.size,), np.float32

    def _bounds(self) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.constant(self.low, tf.float32), tf.constant(self.high, tf.float32)

    def mean_log_std(self, params: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        mean, log_std = tf.split(params, 2, axis=-1)
        return mean, log_std

    def sample(self, params: tf.Tensor) -> tf.Tensor:
        return tanh_gaussian.sample(*self.mean_log_std(params))

    def mode(self, params: tf.Tensor) -> tf.Tensor:
        return self.mean_log_std(params)[0]

    def env_action(self, actions: tf.Tensor) -> tf.Tensor:
        return tanh_gaussian.squash(actions, *self._bounds())

    def log_prob(self, params: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        return tanh_gaussian.log_prob(actions, *self.mean_log_std(params), *self._bounds(), self.log_prob_epsilon)

    def entropy(self, params: tf.Tensor) -> tf.Tensor:
        return tanh_gaussian.gaussian_entropy(self.mean_log_std(params)[1])

    def kl(self, p: tf.Tensor, q: tf.Tensor) -> tf.Tensor:
        (mean_p, log_std_p), (mean_q, log_std_q) = self.mean_log_std(p), self.mean_log_std(q)
        ratio = tf.exp(2.0 * (log_std_p - log_std_q))
        distance = tf.square((mean_p - mean_q) * tf.exp(-log_std_q))
        return tf.reduce_sum(log_std_q - log_std_p + 0.5 * (ratio + distance - 1.0), -1)

    def features(self, actions: tf.Tensor) -> tf.Tensor:
        return tf.tanh(actions)


def for_space(space: ActionSpace) -> Categorical | MultiCategorical | TanhGaussian:
    """The policy-gradient distribution of an action space."""
    if isinstance(space, Discrete):
        return Categorical(space.n)
    if isinstance(space, MultiDiscrete):
        return MultiCategorical(space.nvec)
    if isinstance(space, Box):
        return TanhGaussian(space.size, space.low, space.high)
    raise TypeError(f"no distribution for {space}")


def gaussian_params(mean: tf.Tensor, log_std: tf.Tensor) -> tf.Tensor:
    """``[mean, log_std]`` as a policy head outputs them, ``log_std`` clipped to [LOG_STD_MIN, LOG_STD_MAX]."""
    return tf.concat([mean, tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)], -1)
