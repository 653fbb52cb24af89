"""The TD3 agent: central inference runs the deterministic policy with Gaussian exploration noise for every
actor's rows; the train step updates the twin critics on clipped double-Q targets of the smoothed target
policy, and on the delayed rhythm the policy and every target network."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from aioseed.algos.agent import SKIPPED
from aioseed.algos.networks import Layers
from aioseed.algos.optimizer import adam, apply_finite_gradients
from aioseed.algos.replicas import Replicas
from aioseed.algos.sac import loss as sac_loss
from aioseed.algos.sac.fused_updates import FusedUpdates
from aioseed.algos.td3 import loss
from aioseed.algos.td3.config import Td3Config
from aioseed.algos.td3.networks import Td3Networks
from aioseed.spec import EnvSpec
from aioseed.types import Column


class Td3Agent(FusedUpdates):
    """Implements ``aioseed.algos.agent.Agent`` for Box actions, trained from uniform replay: the critics'
    update, and after every ``policy_frequency``-th one the policy's and the targets' (``aioseed.algos.sac.fused_updates``).
    The stored action is the one that ran, in [-1, 1] per dimension; the env runs its affine map into the box."""

    policy_metric_names = ("losses/actor", "losses/actor_grad_norm")

    def __init__(self, spec: EnvSpec, config: Td3Config, replicas: Replicas | None = None, precision: str = "float32") -> None:
        """``precision``: the hidden layers' (``aioseed.algos.networks.Layers``); output layers and losses stay float32."""
        box = self._take("TD3", spec, config, replicas)
        self.size = box.size
        self._low, self._high = tf.constant(box.low, tf.float32), tf.constant(box.high, tf.float32)
        with self.replicas.scope():
            layers = Layers(precision=precision)
            self.network = Td3Networks(box.size, config.hidden_sizes, config.activation, layers)
            self.target_network = Td3Networks(box.size, config.hidden_sizes, config.activation, layers, name="td3_target")
            observations = np.zeros((1, *spec.observation_shape), spec.observation_dtype)
            actions = np.zeros((1, box.size), np.float32)
            for networks in (self.network, self.target_network):
                networks.actor(observations)
                networks.critics(observations, actions)
            sac_loss.polyak(self.target_network.weights, self.network.weights, 1.0)
            self.actor_optimizer = adam(config.learning_rate, config.adam_epsilon, config.max_grad_norm, self.network.actor.trainable_variables)
            self.critic_optimizer = adam(
                config.critic_learning_rate, config.adam_epsilon, config.max_grad_norm, self.network.critics.trainable_variables
            )
            self.base_learning_rate = tf.Variable(config.learning_rate, trainable=False, dtype=tf.float32, name="base_learning_rate")
        self._compile()

    def output_columns(self) -> Mapping[str, Column]:
        return {"action": ((self.size,), np.float32)}

    def _act_step(self, observations: tf.Tensor, policy_rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        action = self.network.actor(observations)
        noisy = tf.clip_by_value(action + self.config.exploration_noise * tf.random.normal(tf.shape(action)), -1.0, 1.0)
        if self.config.warmup_actions == "uniform":  # until the first update: uniform in the box
            noisy = tf.where(self.critic_optimizer.iterations > 0, noisy, tf.random.uniform(tf.shape(action), -1.0, 1.0))
        action = tf.where(policy_rows[:, None], action, noisy)
        return action, self._low + (action + 1.0) * 0.5 * (self._high - self._low)

    def _critic_update(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        data = self._transitions(inputs)
        target = self.target_network
        next_action = target.actor(data.next_observation)
        noise = self.config.policy_noise * tf.random.normal(tf.shape(next_action))
        next_action = loss.smoothed_actions(next_action, noise, self.config.noise_clip)
        targets = loss.clipped_double_q_targets(data.reward, data.discount, *target.critics(data.next_observation, next_action))
        metrics, q = self._fit_critics(data, data.action, targets)
        return {**metrics, "td3/q_mean": sac_loss.masked_mean(q, data.valid), "td3/target_mean": sac_loss.masked_mean(targets, data.valid)}

    def _policy_update(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        """The policy's step through the first critic, then every target's Polyak step (CleanRL's order)."""
        data = self._transitions(inputs)
        actor = self.network.actor
        with tf.GradientTape() as tape:
            q1 = self.network.critics.q1(data.observation, actor(data.observation))
            actor_loss = loss.actor_loss(q1, data.valid)
        actor_norm, skipped = apply_finite_gradients(
            self.actor_optimizer, actor_loss, tape.gradient(actor_loss, actor.trainable_variables), actor.trainable_variables
        )
        sac_loss.polyak(self.target_network.weights, self.network.weights, self.config.tau)
        return {"losses/actor": actor_loss, "losses/actor_grad_norm": actor_norm, SKIPPED: skipped}

    def _optimizer_rates(self) -> list[tuple[Any, float]]:
        return [(self.actor_optimizer, self.config.learning_rate), (self.critic_optimizer, self.config.critic_learning_rate)]

    def checkpoint_objects(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "target_network": self.target_network,
            "actor_optimizer": self.actor_optimizer,
            "critic_optimizer": self.critic_optimizer,
            "base_learning_rate": self.base_learning_rate,
        }
