"""Networks shared by the agents (Keras 3 layers on the TensorFlow backend)."""

from __future__ import annotations

import keras
import tensorflow as tf


class MLPPolicyValue(keras.Model):
    """MLP torso with a policy-logits head and a value head, for vector observations."""

    def __init__(self, num_actions: int, hidden_sizes: tuple[int, ...] = (64, 64), **kwargs) -> None:
        super().__init__(**kwargs)
        self.torso = [keras.layers.Dense(size, activation="relu") for size in hidden_sizes]
        self.policy = keras.layers.Dense(num_actions, kernel_initializer=keras.initializers.Orthogonal(0.01))
        self.value = keras.layers.Dense(1)

    def call(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = tf.reshape(tf.cast(observations, tf.float32), [tf.shape(observations)[0], -1])
        for layer in self.torso:
            x = layer(x)
        return self.policy(x), tf.squeeze(self.value(x), -1)
