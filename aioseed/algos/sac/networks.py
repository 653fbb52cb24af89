"""SAC's networks: a tanh-Gaussian policy and Q networks on (observation, squashed action)."""

from __future__ import annotations

import keras
import tensorflow as tf

from aioseed.algos.networks import GaussianHead, Layers, flatten_observations, mlp


class GaussianActor(keras.Model):
    """Observations -> ``[mean, log_std]`` <float32>[B, 2A] of the pre-squash Gaussian (state-dependent std)."""

    def __init__(
        self, size: int, hidden_sizes: tuple[int, ...], activation: str, squash_log_std: bool = False, layers: Layers = Layers(), **kwargs
    ) -> None:
        super().__init__(**kwargs)
        self.torso = mlp(hidden_sizes, activation, layers)
        self.head = GaussianHead(size, state_dependent=True, squash_log_std=squash_log_std)

    def call(self, observations: tf.Tensor) -> tf.Tensor:
        return self.head(self.torso(flatten_observations(observations)))


class QNetwork(keras.Model):
    """(observations, actions in [-1, 1]) -> <float32>[B] Q(x, a); ``layer_norm`` normalises each hidden layer; the
    hidden layers compute in ``layers.precision``, the output in float32."""

    def __init__(self, hidden_sizes: tuple[int, ...], activation: str, layer_norm: bool = False, layers: Layers = Layers(), **kwargs) -> None:
        super().__init__(**kwargs)
        self.torso = mlp(hidden_sizes, activation, layers, layer_norm=layer_norm)
        self.out = keras.layers.Dense(1)

    def call(self, observations: tf.Tensor, actions: tf.Tensor) -> tf.Tensor:
        return tf.squeeze(self.out(self.torso(tf.concat([flatten_observations(observations), actions], -1))), -1)


class TwinQ(keras.layers.Layer):
    """Two Q networks (checkpointed together, as ``q1`` and ``q2``)."""

    def __init__(self, hidden_sizes: tuple[int, ...], activation: str, layer_norm: bool = False, layers: Layers = Layers(), **kwargs) -> None:
        super().__init__(**kwargs)
        self.q1 = QNetwork(hidden_sizes, activation, layer_norm, layers)
        self.q2 = QNetwork(hidden_sizes, activation, layer_norm, layers)

    def call(self, observations: tf.Tensor, actions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return self.q1(observations, actions), self.q2(observations, actions)
