"""Running statistics on the learner: observation normalisation and reward scaling (as CleanRL's PPO for
MuJoCo does with gymnasium's NormalizeObservation and NormalizeReward wrappers on the actors).

The statistics live in TensorFlow variables on the learner: they are checkpointed with the agent, and an
observation normaliser's travel to IMPALA-mode actors with the network's weights. Only the train step
updates them, from the batches it trains on, so every process that acts sees the same figures.
"""

from __future__ import annotations

from typing import NamedTuple

import keras
import numpy as np
import tensorflow as tf


class Moments(NamedTuple):
    count: tf.Tensor
    mean: tf.Tensor
    variance: tf.Tensor


def merge_moments(running: Moments, batch: Moments) -> Moments:
    """The count, mean and (population) variance of two samples together, from each one's (Chan et al. 1979)."""
    count = running.count + batch.count
    delta = batch.mean - running.mean
    mean = running.mean + delta * batch.count / count
    m2 = running.variance * running.count + batch.variance * batch.count + tf.square(delta) * running.count * batch.count / count
    return Moments(count, mean, m2 / count)


def batch_moments(x: tf.Tensor) -> Moments:
    """Moments of ``[N, ...]`` samples along the first axis."""
    mean, variance = tf.nn.moments(x, axes=[0])
    return Moments(tf.cast(tf.shape(x)[0], x.dtype), mean, variance)


class RunningNormalizer(keras.layers.Layer):
    """``clip((x - mean) / sqrt(var + epsilon), -clip, clip)`` with the running moments of every observation the
    train step has seen (float64 statistics; float32 output). Before any update it only clips ``x``."""

    def __init__(self, shape: tuple[int, ...], clip: float = 10.0, epsilon: float = 1e-8, **kwargs) -> None:
        super().__init__(**kwargs)
        self.clip, self.epsilon = clip, epsilon
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="float64", trainable=False, name="count")
        self.mean = self.add_weight(shape=shape, initializer="zeros", dtype="float64", trainable=False, name="mean")
        self.variance = self.add_weight(shape=shape, initializer="ones", dtype="float64", trainable=False, name="variance")

    def call(self, x: tf.Tensor) -> tf.Tensor:
        scaled = (tf.cast(x, tf.float64) - self.mean) / tf.sqrt(self.variance + self.epsilon)
        return tf.cast(tf.clip_by_value(scaled, -self.clip, self.clip), tf.float32)

    def update(self, x: np.ndarray | tf.Tensor) -> None:
        """Adds ``[N, *shape]`` samples to the moments."""
        batch = batch_moments(tf.cast(x, tf.float64))
        merged = merge_moments(Moments(self.count, self.mean, self.variance), batch)
        self.count.assign(merged.count)
        self.mean.assign(merged.mean)
        self.variance.assign(merged.variance)


class RewardScaler(tf.Module):
    """Divides rewards by the running standard deviation of each env's discounted return, then clips them
    (gymnasium's NormalizeReward, per env slot on the learner). Unrolls of a slot must arrive in order, as the
    V-trace path's queue delivers them (a batch may hold several); a slot's return restarts at an episode's start."""

    def __init__(self, discount: float, clip: float = 10.0, epsilon: float = 1e-8) -> None:
        super().__init__(name="reward_scaler")
        self.discount, self.clip, self.epsilon = discount, clip, epsilon
        self.count = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="count")
        self.mean = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="mean")
        self.variance = tf.Variable(1.0, dtype=tf.float64, trainable=False, name="variance")
        self._returns: dict[int, float] = {}

    def scale(self, rewards: np.ndarray, done: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """Time-major ``[T + 1, B]`` rewards (step t holds the reward leading to it) of the unrolls of ``slots``
        <int>[B]: updates the moments with steps 1..T (step 0 repeats the previous unroll's last) and returns
        all T + 1 rewards scaled."""
        seen = np.empty((len(rewards) - 1, len(slots)))
        # A batch can hold consecutive unrolls of one slot (asynchronous acting): the k-th of each slot
        # carries on from the return the (k-1)-th left.
        occurrence = np.zeros(len(slots), np.int64)
        counted: dict[int, int] = {}
        for i, slot in enumerate(slots.tolist()):
            occurrence[i] = counted.get(slot, 0)
            counted[slot] = occurrence[i] + 1
        for k in range(int(occurrence.max(initial=-1)) + 1):
            columns = np.flatnonzero(occurrence == k)
            returns = np.array([self._returns.get(int(s), 0.0) for s in slots[columns]])
            for t in range(1, len(rewards)):
                returns = returns * self.discount * (1.0 - done[t, columns]) + rewards[t, columns]
                seen[t - 1, columns] = returns
            self._returns.update(zip(slots[columns].tolist(), returns.tolist()))
        merged = merge_moments(Moments(self.count, self.mean, self.variance), batch_moments(tf.constant(seen.ravel())))
        self.count.assign(merged.count)
        self.mean.assign(merged.mean)
        self.variance.assign(merged.variance)
        std = np.sqrt(float(self.variance.numpy()) + self.epsilon)
        return np.clip(rewards / std, -self.clip, self.clip).astype(np.float32)
