"""TD3's policy: a deterministic action in [-1, 1] per dimension (its critics are SAC's ``TwinQ``)."""

from __future__ import annotations

import keras
import tensorflow as tf

from aioseed.algos.networks import Layers, flatten_observations, mlp
from aioseed.algos.sac.networks import TwinQ


class DeterministicActor(keras.Model):
    """Observations -> <float32>[B, A] actions in [-1, 1] (a tanh output layer, in float32)."""

    def __init__(self, size: int, hidden_sizes: tuple[int, ...], activation: str, layers: Layers = Layers(), **kwargs) -> None:
        super().__init__(**kwargs)
        self.torso = mlp(hidden_sizes, activation, layers)
        self.out = keras.layers.Dense(size, activation="tanh")

    def call(self, observations: tf.Tensor) -> tf.Tensor:
        return self.out(self.torso(flatten_observations(observations)))


class Td3Networks(keras.layers.Layer):
    """The policy and the twin critics; the online ones are checkpointed as ``network``, their targets (the
    same structure, Polyak-averaged) as ``target_network``."""

    def __init__(self, size: int, hidden_sizes: tuple[int, ...], activation: str, layers: Layers = Layers(), name: str = "td3") -> None:
        super().__init__(name=name)
        self.actor = DeterministicActor(size, hidden_sizes, activation, layers)
        self.critics = TwinQ(hidden_sizes, activation, layers=layers, name="critics")
