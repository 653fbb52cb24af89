"""A fourth algorithm, plugged in from outside aioseed: advantage actor-critic (A2C) in about a hundred lines.

It is the worked example of docs/architecture.md ("Adding an algorithm"): an agent that implements
``aioseed.algos.agent.Agent`` and an ``Algorithm`` record, published under the entry-point group
``aioseed.algorithms`` (tests/algos/test_plugin_algorithm.py installs it so). Nothing else in aioseed changes.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aioseed.action_space import Discrete
from aioseed.algos.agent import SKIPPED
from aioseed.algos.builder import Algorithm
from aioseed.algos.gae import generalized_advantage_estimation


@dataclasses.dataclass(frozen=True)
class A2CConfig:
    """The toy's settings (no CLI section: an algorithm without one runs on these defaults)."""

    learning_rate: float = 3e-3
    discount: float = 0.99
    lambda_: float = 0.95
    entropy_cost: float = 0.01
    hidden: int = 64


class A2CAgent:
    """A shared-torso MLP with a softmax policy and a value head, trained by one A2C update per batch."""

    burn_in = 0
    uses_replay = False

    def __init__(self, spec: Any, settings: A2CConfig, replicas: Any) -> None:
        self.spec, self.replicas, self.settings = spec, replicas, settings
        actions = spec.action_space.n
        inputs = keras.Input(spec.observation_shape)
        torso = keras.layers.Dense(settings.hidden, activation="tanh")(inputs)
        self.network = keras.Model(inputs, keras.layers.Dense(actions + 1)(torso))
        self.optimizer = keras.optimizers.Adam(settings.learning_rate)
        self._lock = threading.Lock()
        self._rng = np.random.default_rng(0)

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {"action": ((), np.int32)}

    def state_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {}

    def _heads(self, observations: Any) -> tuple[tf.Tensor, tf.Tensor]:
        """(logits, value) of rows of any leading shape ([B] acting, [T + 1, B] training)."""
        observations = tf.cast(observations, tf.float32)
        leading = tf.shape(observations)[:-1]
        out = self.network(tf.reshape(observations, (-1, observations.shape[-1])))
        out = tf.reshape(out, tf.concat([leading, [-1]], 0))
        return out[..., :-1], out[..., -1]

    def infer(self, observations: np.ndarray, state: Mapping[str, np.ndarray], slots: Any = None, evaluation: Any = None,
              rewards: Any = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        with self._lock:
            logits, _ = self._heads(observations)
        probabilities = tf.nn.softmax(logits).numpy().astype(np.float64)
        cumulative = probabilities.cumsum(axis=1)
        actions = (self._rng.random((len(cumulative), 1)) * cumulative[:, -1:] > cumulative).sum(axis=1)
        return {"action": actions.astype(np.int32)}, {}

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = lambda: None) -> dict[str, float]:
        s = self.settings
        with self._lock, tf.GradientTape() as tape:
            logits, values = self._heads(batch["observation"])  # [T + 1, B]
            valid = 1.0 - tf.cast(batch["phantom"][:-1], tf.float32)  # a final row's action never ran
            discount = s.discount * (1.0 - tf.cast(batch["done"][1:], tf.float32))
            rewards = tf.cast(batch["reward"][1:], tf.float32)
            targets = generalized_advantage_estimation(rewards, discount, values[:-1], values[1:], s.lambda_, valid_t=valid)
            log_policy = tf.nn.log_softmax(logits[:-1])
            taken = tf.gather(log_policy, tf.cast(batch["action"][:-1], tf.int32), batch_dims=2)
            advantages = tf.stop_gradient(targets.advantages)
            entropy = -tf.reduce_sum(tf.exp(log_policy) * log_policy, -1)
            count = tf.maximum(tf.reduce_sum(valid), 1.0)
            loss = tf.reduce_sum(valid * (-taken * advantages - s.entropy_cost * entropy
                                          + 0.5 * tf.square(tf.stop_gradient(targets.returns) - values[:-1]))) / count
            gradients = tape.gradient(loss, self.network.trainable_variables)
            self.optimizer.apply_gradients(zip(gradients, self.network.trainable_variables))
        on_update()
        return {"losses/total": float(loss), SKIPPED: 0.0}

    def set_progress(self, frames: int) -> None:
        pass

    def checkpoint_objects(self) -> dict[str, Any]:
        return {"network": self.network, "optimizer": self.optimizer}

    def set_learning_rate(self, value: float) -> None:
        self.optimizer.learning_rate.assign(value)

    @property
    def learning_rate(self) -> float:
        return float(self.optimizer.learning_rate.numpy())

    current_learning_rate = learning_rate


A2C = Algorithm(
    name="toy-a2c",
    section=None,
    default_settings=A2CConfig,
    make_agent=lambda settings, spec, replicas, **_: A2CAgent(spec, settings, replicas),
    action_spaces=(Discrete,),
)
