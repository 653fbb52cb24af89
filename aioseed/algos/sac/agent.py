"""The SAC agent: central inference samples squashed actions for every actor's rows; the train step updates
the twin critics, the policy and the temperature on transitions replayed uniformly on the learner."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aioseed.action_space import Box
from aioseed.algos.agent import SKIPPED, no_callback
from aioseed.algos.distributions import TanhGaussian
from aioseed.algos.networks import Layers
from aioseed.algos.optimizer import adam, apply_finite_gradients
from aioseed.algos.replicas import Replicas
from aioseed.algos.sac import loss
from aioseed.algos.sac.config import SacConfig
from aioseed.algos.sac.networks import GaussianActor, TwinQ
from aioseed.spec import EnvSpec
from aioseed.types import ENV_ACTION, Column

UNIFORM_EDGE = 1.0 - 1e-6
"""Uniform warm-up actions stay this far inside the box, so that their pre-squash sample atanh(a) is finite."""
COLUMNS = ("observation", "action", "reward", "done", "phantom")
"""The unroll columns a train step reads (time-major ``[T + 1, B, ...]``)."""
ALPHA_SKIPPED = "sac/alpha_skipped"
"""1 when the temperature's update was skipped as non-finite (counted as skipped; it leaves the version as it is)."""
APPLIED = "sac/applied"
"""The fused call's count of updates that changed the critics or the policy (each is a new version)."""
POLICY_METRICS = ("losses/actor", "losses/alpha", "losses/actor_grad_norm", "policy/entropy")
"""The policy update's metrics, kept from its latest update between the delayed ones."""


class SacNetworks(keras.layers.Layer):
    """The policy and the twin critics (checkpointed as ``network``; ``target_network`` holds the targets)."""

    def __init__(self, size: int, config: SacConfig, layers: Layers = Layers()) -> None:
        super().__init__(name="sac")
        self.actor = GaussianActor(size, config.hidden_sizes, config.activation, squash_log_std=config.log_std == "tanh", layers=layers)
        self.critics = TwinQ(config.hidden_sizes, config.activation, config.critic_layer_norm, layers=layers, name="critics")


class SacAgent:
    """Implements ``aioseed.algos.agent.Agent`` for Box actions, trained from replay (``uses_replay``)."""

    uses_replay = True
    burn_in = 0

    def __init__(self, spec: EnvSpec, config: SacConfig, replicas: Replicas | None = None, precision: str = "float32") -> None:
        """``precision``: the hidden layers' (``aioseed.algos.networks.Layers``); heads and losses stay float32."""
        if not isinstance(spec.action_space, Box):
            raise ValueError(f"SAC acts in a Box action space; this env has {spec.action_space.describe()}: use --agent impala")
        self.spec = spec
        self.config = config
        self.replicas = replicas or Replicas()
        if self.replicas.count > 1:
            raise ValueError("SAC trains on one device; name one training device")
        box = spec.action_space
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
        self._rates_applied = False
        rows = tf.TensorSpec([None, *spec.observation_shape], tf.as_dtype(spec.observation_dtype))
        self._act = tf.function(self._act_step, input_signature=[rows, tf.TensorSpec([None], tf.bool)])
        self._train_critics = tf.function(self._critic_update, reduce_retracing=True)
        self._train_policy = tf.function(self._policy_update, reduce_retracing=True)
        self._train_fused = tf.function(self._fused_updates, jit_compile=config.jit_compile)
        self._policy_metrics: dict[str, float] = {}
        self._critic_steps: int | None = None
        """Critic updates tried, applied or skipped (from the optimizer's count at the first step): the delayed
        policy updates keep their rhythm across a skipped critic update."""

    def output_columns(self) -> Mapping[str, Column]:
        return {"action": self.distribution.action_column()}

    def state_columns(self) -> Mapping[str, Column]:
        return {}

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """A sampled action per row (evaluation rows: ``SacConfig.evaluation_action``); ``action`` keeps the
        pre-squash sample, ``env_action`` is what the env runs."""
        mean_rows = np.zeros(len(observations), bool) if evaluation is None else np.asarray(evaluation, bool)
        if self.config.evaluation_action == "sample":
            mean_rows = np.zeros_like(mean_rows)
        with tf.device(self.replicas.inference_device()):
            action, env_action = self._act(observations, mean_rows)
        return {"action": action.numpy(), ENV_ACTION: env_action.numpy()}, {}

    def _act_step(self, observations: tf.Tensor, mean_rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        params = self.network.actor(observations)
        sampled = self.distribution.sample(params)
        if self.config.warmup_actions == "uniform":  # until the first update: the squashed action uniform in the box
            uniform = tf.atanh(tf.random.uniform(tf.shape(sampled), -UNIFORM_EDGE, UNIFORM_EDGE))
            sampled = tf.where(self.critic_optimizer.iterations > 0, sampled, uniform)
        u = tf.where(mean_rows[:, None], self.distribution.mode(params), sampled)
        return u, self.distribution.env_action(u)

    @property
    def alpha(self) -> float:
        return float(tf.exp(self.log_alpha).numpy())

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = no_callback) -> dict[str, Any]:
        """``minibatches`` updates on equal shares of the batch's T x B transitions: each one of the critics and the
        targets' Polyak step, and after every ``policy_frequency``-th that many updates of the policy and the
        temperature on the same share (CleanRL's delayed updates). Returns metrics (the critics' averaged, the
        policy's from its latest update) and ``priorities`` (ones: the replay samples uniformly)."""
        inputs = {name: batch[name] for name in COLUMNS}
        due = self._policy_due(self.config.minibatches)
        if self.config.update == "separate":
            metrics, applied = self._separate_updates(inputs, due[0])
        else:
            out = {name: float(value) for name, value in self._train_fused(inputs, due).items()}
            applied = int(out.pop(APPLIED))
            if any(due):
                self._policy_metrics = {name: out[name] for name in POLICY_METRICS}
            metrics = {**{name: value for name, value in out.items() if name not in POLICY_METRICS}, **self._policy_metrics}
        metrics["losses/total"] = metrics["losses/critic"] + metrics["losses/actor"]
        for _ in range(applied):  # each update that changed the policy that acts, or the critics that train it
            on_update()
        metrics["priorities"] = np.ones(batch["action"].shape[1], np.float32)
        return metrics

    def _policy_due(self, updates: int) -> tuple[bool, ...]:
        """Which of the next ``updates`` critic updates the delayed policy updates follow (and the very first). The
        count is of critic updates tried, from the optimizer's at the first step: a skipped one keeps the rhythm."""
        if self._critic_steps is None:
            self._critic_steps = int(self.critic_optimizer.iterations.numpy())
        due = tuple((self._critic_steps + i) % self.config.policy_frequency == 0 for i in range(updates))
        self._critic_steps += updates
        return (True, *due[1:]) if not self._policy_metrics else due

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

    def _fused_updates(self, inputs: dict[str, tf.Tensor], due: tuple[bool, ...]) -> dict[str, tf.Tensor]:
        """Every update of a train step in one call (``due``: static, so the graph is traced once per rhythm):
        the critics' metrics averaged, the latest policy update's, ``SKIPPED`` summed over the updates and
        ``APPLIED`` the updates that changed the critics or the policy."""
        rows, left = divmod(inputs["action"].shape[1], len(due))
        if left:
            raise ValueError(f"a batch of {inputs['action'].shape[1]} unrolls does not split into {len(due)} equal minibatches")
        critics, policy, skipped, applied = [], [], [], []
        for i, policy_due in enumerate(due):
            share = {name: column[:, i * rows : (i + 1) * rows] for name, column in inputs.items()}
            critic = self._critic_update(share)
            skip = critic.pop(SKIPPED)
            changed = 1.0 - skip
            for _ in range(self.config.policy_frequency if policy_due else 0):
                policy.append(self._policy_update(share))
                skip = tf.maximum(skip, tf.maximum(policy[-1][SKIPPED], policy[-1][ALPHA_SKIPPED]))
                changed = tf.maximum(changed, 1.0 - policy[-1][SKIPPED])
            critics.append(critic)
            skipped.append(skip)
            applied.append(changed)
        out = {name: tf.reduce_mean(tf.stack([critic[name] for critic in critics])) for name in critics[0]}
        if policy:
            out.update({name: policy[-1][name] for name in POLICY_METRICS})
        return {**out, SKIPPED: tf.add_n(skipped), APPLIED: tf.add_n(applied)}

    def _sample(self, observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """A reparameterised pre-squash sample for each row, and its log-probability (tanh-corrected)."""
        params = self.network.actor(observations)
        u = self.distribution.sample(params)
        return u, self.distribution.log_prob(params, u)

    def _transitions(self, inputs: dict[str, Any]) -> loss.Transitions:
        return loss.transitions(
            inputs["observation"], inputs["action"], inputs["reward"], inputs["done"], inputs["phantom"], self.config.discount
        )

    def _critic_update(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        data = self._transitions(inputs)
        critics = self.network.critics
        alpha = tf.exp(self.log_alpha)
        next_u, next_log_prob = self._sample(data.next_observation)
        targets = loss.soft_targets(data.reward, data.discount, *self.target_network(data.next_observation, tf.tanh(next_u)), next_log_prob, alpha)
        with tf.GradientTape() as tape:
            q1, q2 = critics(data.observation, tf.tanh(data.action))
            critic_loss = loss.critic_loss(q1, q2, targets, data.valid)
        critic_norm, skipped = apply_finite_gradients(
            self.critic_optimizer, critic_loss, tape.gradient(critic_loss, critics.trainable_variables), critics.trainable_variables
        )
        loss.polyak(self.target_network.weights, critics.weights, self.config.tau)
        return {
            "losses/critic": critic_loss,
            "losses/grad_norm": critic_norm,
            "sac/alpha": alpha,
            "sac/q_mean": loss.masked_mean(tf.minimum(q1, q2), data.valid),
            "sac/target_mean": loss.masked_mean(targets, data.valid),
            SKIPPED: skipped,
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

    def change_settings(self, config: SacConfig) -> None:
        """Between train steps: SAC's live field is the replay ratio, which the learner's replay and pacing read."""
        self.config = config

    def set_progress(self, frames: int) -> None:
        """SAC's rates have no schedule; the first call applies the base rate (restored from a checkpoint)."""
        if not self._rates_applied:
            self._apply_learning_rate()

    def set_learning_rate(self, value: float) -> None:
        """Sets the policy's rate; the critics' and the temperature's keep their configured ratio to it."""
        if not value > 0:
            raise ValueError(f"learning_rate must be positive, got {value}")
        self.base_learning_rate.assign(value)
        self._apply_learning_rate()

    def _apply_learning_rate(self) -> None:
        self._rates_applied = True
        scale = self.learning_rate / self.config.learning_rate
        self.actor_optimizer.learning_rate = self.config.learning_rate * scale
        self.critic_optimizer.learning_rate = self.config.critic_learning_rate * scale
        self.alpha_optimizer.learning_rate = self.config.alpha_learning_rate * scale

    @property
    def learning_rate(self) -> float:
        return float(self.base_learning_rate.numpy())

    @property
    def current_learning_rate(self) -> float:
        return float(keras.ops.convert_to_numpy(self.actor_optimizer.learning_rate))

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
