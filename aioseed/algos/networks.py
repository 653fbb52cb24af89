"""Networks shared by the agents (Keras 3 layers on the TensorFlow backend)."""

from __future__ import annotations

import keras
import tensorflow as tf


def _mlp(hidden_sizes: tuple[int, ...], activation: str) -> list[keras.layers.Layer]:
    return [keras.layers.Dense(size, activation=activation) for size in hidden_sizes]


class MLPPolicyValue(keras.Model):
    """MLP for vector observations: policy logits and a value.

    With ``shared_torso`` both heads sit on one torso; otherwise the value has
    its own (as in PPO implementations), so its large-scale regression
    gradients do not swamp the policy's features.
    """

    def __init__(
        self,
        num_actions: int,
        hidden_sizes: tuple[int, ...] = (64, 64),
        shared_torso: bool = False,
        activation: str = "tanh",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.policy_torso = _mlp(hidden_sizes, activation)
        self.value_torso = None if shared_torso else _mlp(hidden_sizes, activation)
        self.policy = keras.layers.Dense(num_actions, kernel_initializer=keras.initializers.Orthogonal(0.01))
        self.value = keras.layers.Dense(1)

    def call(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = tf.reshape(tf.cast(observations, tf.float32), [tf.shape(observations)[0], -1])
        h = x
        for layer in self.policy_torso:
            h = layer(h)
        v = h
        if self.value_torso is not None:
            v = x
            for layer in self.value_torso:
                v = layer(v)
        return self.policy(h), tf.squeeze(self.value(v), -1)


class NatureCNNPolicyValue(keras.Model):
    """The Nature DQN torso (Mnih et al. 2015) with policy and value heads, for stacked frames.

    Takes ``uint8[B, stack, 84, 84]`` (channels first, as ale-py stacks them) and
    runs the convolutions channels-last, the layout TensorFlow's CPU kernels want.
    """

    def __init__(self, num_actions: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.torso = [
            keras.layers.Conv2D(32, 8, strides=4, activation="relu"),
            keras.layers.Conv2D(64, 4, strides=2, activation="relu"),
            keras.layers.Conv2D(64, 3, strides=1, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(512, activation="relu"),
        ]
        self.policy = keras.layers.Dense(num_actions, kernel_initializer=keras.initializers.Orthogonal(0.01))
        self.value = keras.layers.Dense(1)

    def call(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = tf.transpose(tf.cast(observations, tf.float32) / 255.0, [0, 2, 3, 1])
        for layer in self.torso:
            x = layer(x)
        return self.policy(x), tf.squeeze(self.value(x), -1)
