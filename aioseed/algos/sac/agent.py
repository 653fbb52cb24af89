"""The SAC agent: central inference samples squashed actions for every actor's rows; the train step updates
the twin critics, the policy and the temperature on transitions replayed uniformly on the learner."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aioseed.algos.agent import SKIPPED
from aioseed.algos.distributions import TanhGaussian
from aioseed.algos.networks import Layers
from aioseed.algos.optimizer import adam, apply_finite_gradients
from aioseed.algos.replicas import Replicas
from aioseed.algos.sac import loss
from aioseed.algos.sac.config import SacConfig
from aioseed.algos.sac.fused_updates import FusedUpdates
from aioseed.algos.sac.networks import GaussianActor, TwinQ
from aioseed.spec import EnvSpec
from aioseed.types import Column

UNIFORM_EDGE = 1.0 - 1e-6
"""Uniform warm-up actions stay this far inside the box, so that their pre-squash sample atanh(a) is finite."""
ALPHA_SKIPPED = "sac/alpha_skipped"
"""1 when the temperature's update was skipped as non-finite (counted as skipped; it leaves the version as it is)."""


class SacNetworks(keras.layers.Layer):
    """The policy and the twin critics (checkpointed as ``network``; ``target_network`` holds the targets)."""

    def __init__(self, size: int, config: SacConfig, layers: Layers = Layers()) -> None:
        super().__init__(name="sac")
        self.actor = GaussianActor(size, config.hidden_sizes, config.activation, squash_log_std=config.log_std == "tanh", layers=layers)
        self.critics = TwinQ(config.hidden_sizes, config.activation, config.critic_layer_norm, layers=layers, name="critics")


class SacAgent(FusedUpdates):
    """Implements ``aioseed.algos.agent.Agent`` for Box actions, trained from replay (``uses_replay``): the
    critics' update, and on the delayed rhythm ``policy_frequency`` updates of the policy and the temperature
    (``aioseed.algos.sac.fused_updates``)."""

    policy_metric_names = ("losses/actor", "losses/alpha", "losses/actor_grad_norm", "policy/entropy")
    also_skipped = (ALPHA_SKIPPED,)

    def __init__(self, spec: EnvSpec, config: SacConfig, replicas: Replicas | None = None, precision: str = "float32") -> None:
        """``precision``: the hidden layers' (``aioseed.algos.networks.Layers``); heads and losses stay float32."""
        box = self._take("SAC", spec, config, replicas)
        self.distribution = TanhGaussian(size=box.size, low=box.low, high=box.high, log_prob_epsilon=config.log_prob_epsilon)
        self.target_entropy = -float(box.size) if config.target_entropy is None else config.target_entropy
        with self.replicas.scope():
            layers = Layers(precision=precision)
            self.network = SacNetworks(box.size, config, layers)
            self.target_network = TwinQ(config.hidden_sizes, config.activation, config.critic_layer_norm, layers=layers, name="target_critics")
            observations = np.zeros((1, *spec.observation_shape), spec.observation_dtype)
            actions = np.zeros((1, box.size), np.float32)
            self.network.actor(observations)
            for critics in (self.network.critics, self.target_network):
                critics(observations, actions)
            loss.polyak(self.target_network.weights, self.network.critics.weights, 1.0)
            self.log_alpha = tf.Variable(math.log(config.initial_alpha), dtype=tf.float32, name="log_alpha")
            self.actor_optimizer = adam(config.learning_rate, config.adam_epsilon, config.max_grad_norm, self.network.actor.trainable_variables)
            self.critic_optimizer = adam(
                config.critic_learning_rate, config.adam_epsilon, config.max_grad_norm, self.network.critics.trainable_variables
            )
            self.alpha_optimizer = adam(config.alpha_learning_rate, config.adam_epsilon, None, [self.log_alpha])
            self.base_learning_rate = tf.Variable(config.learning_rate, trainable=False, dtype=tf.float32, name="base_learning_rate")
        self._train_critics = tf.function(self._critic_update, reduce_retracing=True)
        self._train_policy = tf.function(self._policy_update, reduce_retracing=True)
        self._compile()

    def output_columns(self) -> Mapping[str, Column]:
        return {"action": self.distribution.action_column()}

    def _act_step(self, observations: tf.Tensor, mean_rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        params = self.network.actor(observations)
        sampled = self.distribution.sample(params)
        if self.config.warmup_actions == "uniform":  # until the first update: the squashed action uniform in the box
            uniform = tf.atanh(tf.random.uniform(tf.shape(sampled), -UNIFORM_EDGE, UNIFORM_EDGE))
            sampled = tf.where(self.critic_optimizer.iterations > 0, sampled, uniform)
        u = tf.where(mean_rows[:, None], self.distribution.mode(params), sampled)
        return u, self.distribution.env_action(u)

    @property
    def policy_repeats(self) -> int:
        """The policy and the temperature update ``policy_frequency`` times after every ``policy_frequency``-th
        critic update, so both average one update per critic update."""
        return self.config.policy_frequency

    @property
    def alpha(self) -> float:
        return float(tf.exp(self.log_alpha).numpy())

    def _updates(self, inputs: dict[str, np.ndarray], due: tuple[bool, ...]) -> tuple[dict[str, Any], int]:
        if self.config.update == "separate":
            return self._separate_updates(inputs, due[0])
        return super()._updates(inputs, due)

    def _separate_updates(self, inputs: dict[str, np.ndarray], due: bool) -> tuple[dict[str, Any], int]:
        """One call for the critics, one per policy update: the path before the fused update."""
        metrics: dict[str, Any] = {name: float(value) for name, value in self._train_critics(inputs).items()}
        skipped = metrics[SKIPPED]
        applied = not skipped
        if due:
            for _ in range(self.config.policy_frequency):
                self._policy_metrics = {name: float(value) for name, value in self._train_policy(inputs).items()}
                # The temperature's skip counts as skipped; only the actor's update changes the policy that acts.
                policy_skipped, alpha_skipped = self._policy_metrics.pop(SKIPPED), self._policy_metrics.pop(ALPHA_SKIPPED)
                skipped, applied = max(skipped, policy_skipped, alpha_skipped), applied or not policy_skipped
        metrics.update(self._policy_metrics)
        metrics[SKIPPED] = skipped
        return metrics, int(applied)

    def _sample(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """A reparameterised pre-squash sample for each row, and its log-probability (tanh-corrected)."""
        params = self.network.actor(observations)
        u = self.distribution.sample(params)
        return u, self.distribution.log_prob(params, u)

    def _critic_update(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        data = self._transitions(inputs)
        alpha = tf.exp(self.log_alpha)
        next_u, next_log_prob = self._sample(data.next_observation)
        targets = loss.soft_targets(data.reward, data.discount, *self.target_network(data.next_observation, tf.tanh(next_u)), next_log_prob, alpha)
        metrics, q = self._fit_critics(data, tf.tanh(data.action), targets)
        loss.polyak(self.target_network.weights, self.network.critics.weights, self.config.tau)
        return {
            **metrics,
            "sac/alpha": alpha,
            "sac/q_mean": loss.masked_mean(q, data.valid),
            "sac/target_mean": loss.masked_mean(targets, data.valid),
        }

    def _policy_update(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        """The policy's step, then the temperature's on a fresh sample of the updated policy (CleanRL's order)."""
        data = self._transitions(inputs)
        actor = self.network.actor
        with tf.GradientTape() as tape:
            u, log_prob = self._sample(data.observation)
            actor_loss = loss.actor_loss(log_prob, *self.network.critics(data.observation, tf.tanh(u)), tf.exp(self.log_alpha), data.valid)
        actor_norm, skipped = apply_finite_gradients(
            self.actor_optimizer, actor_loss, tape.gradient(actor_loss, actor.trainable_variables), actor.trainable_variables
        )
        alpha_loss, alpha_skipped = tf.constant(0.0), tf.constant(0.0)
        if self.config.autotune_alpha:
            _, new_log_prob = self._sample(data.observation)
            with tf.GradientTape() as tape:
                alpha_loss = loss.temperature_loss(self.log_alpha, new_log_prob, self.target_entropy, data.valid)
            _, alpha_skipped = apply_finite_gradients(self.alpha_optimizer, alpha_loss, tape.gradient(alpha_loss, [self.log_alpha]), [self.log_alpha])
        return {
            "losses/actor": actor_loss,
            "losses/alpha": alpha_loss,
            "losses/actor_grad_norm": actor_norm,
            "policy/entropy": -loss.masked_mean(log_prob, data.valid),
            SKIPPED: skipped,
            ALPHA_SKIPPED: alpha_skipped,
        }

    def _optimizer_rates(self) -> list[tuple[Any, float]]:
        return [
            (self.actor_optimizer, self.config.learning_rate),
            (self.critic_optimizer, self.config.critic_learning_rate),
            (self.alpha_optimizer, self.config.alpha_learning_rate),
        ]

    def checkpoint_objects(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "target_network": self.target_network,
            "actor_optimizer": self.actor_optimizer,
            "critic_optimizer": self.critic_optimizer,
            "alpha_optimizer": self.alpha_optimizer,
            "log_alpha": self.log_alpha,
            "base_learning_rate": self.base_learning_rate,
        }
