"""The V-trace agent: network, batched inference and the compiled train step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.loss import clip_rewards, impala_loss
from aioseed.algos.networks import ImpalaResNetPolicyValue, MLPPolicyValue, NatureCNNPolicyValue
from aioseed.spec import EnvSpec


def build_network(spec: EnvSpec, config: ImpalaConfig) -> keras.Model:
    kind = config.network
    if kind == "auto":
        kind = "nature_cnn" if len(spec.observation_shape) == 3 and spec.dtype == np.uint8 else "mlp"
    if kind == "nature_cnn":
        return NatureCNNPolicyValue(spec.num_actions)
    if kind == "impala_resnet":
        return ImpalaResNetPolicyValue(spec.num_actions)
    return MLPPolicyValue(
        spec.num_actions, config.hidden_sizes, shared_torso=config.shared_torso, activation=config.activation
    )


class PolicyModule(tf.Module):
    """The exported policy: ``act(observations) -> {action, logits, value}``; loadable without aioseed."""

    def __init__(self, network: keras.Model, spec: EnvSpec) -> None:
        super().__init__(name="aioseed_policy")
        self.network = network
        self.observation_shape = tf.constant(spec.observation_shape, tf.int64)
        self.num_actions = tf.constant(spec.num_actions, tf.int64)
        signature = tf.TensorSpec([None, *spec.observation_shape], tf.as_dtype(spec.observation_dtype))
        self.act = tf.function(self._act, input_signature=[signature])
        self.greedy = tf.function(self._greedy, input_signature=[signature])

    def _act(self, observations: tf.Tensor) -> dict[str, tf.Tensor]:
        logits, value = self.network(observations)
        action = tf.random.categorical(logits, 1, dtype=tf.int32)[:, 0]
        return {"action": action, "logits": logits, "value": value}

    def _greedy(self, observations: tf.Tensor) -> dict[str, tf.Tensor]:
        logits, value = self.network(observations)
        return {"action": tf.argmax(logits, -1, output_type=tf.int32), "logits": logits, "value": value}


class ImpalaAgent:
    """V-trace actor-critic with an MLP. Implements ``aioseed.algos.agent.Agent``."""

    def __init__(self, spec: EnvSpec, config: ImpalaConfig, device: str = "/CPU:0") -> None:
        self.spec = spec
        self.config = config
        self.device = device
        with tf.device(device):
            self.network = build_network(spec, config)
            self.network(np.zeros((1, *spec.observation_shape), spec.observation_dtype))
            self.optimizer = keras.optimizers.Adam(
                learning_rate=config.learning_rate, epsilon=config.adam_epsilon, global_clipnorm=config.max_grad_norm
            )
            self.optimizer.build(self.network.trainable_variables)
        self.policy = PolicyModule(self.network, spec)
        self._train = tf.function(self._train_step)

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {"action": ((), np.int32), "logits": ((self.spec.num_actions,), np.float32)}

    def infer(self, observations: np.ndarray) -> dict[str, np.ndarray]:
        with tf.device(self.device):
            out = self.policy.act(observations)
        return {"action": out["action"].numpy(), "logits": out["logits"].numpy()}

    def train_step(self, batch: Mapping[str, np.ndarray]) -> dict[str, float]:
        with tf.device(self.device):
            metrics = self._train(
                batch["observation"], batch["action"], batch["logits"], batch["reward"], batch["done"], batch["phantom"]
            )
        return {name: float(value) for name, value in metrics.items()}

    def checkpoint_objects(self) -> dict[str, Any]:
        return {"network": self.network, "optimizer": self.optimizer}

    @property
    def learning_rate(self) -> float:
        return float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))

    def set_learning_rate(self, value: float) -> None:
        if not value > 0:
            raise ValueError(f"learning_rate must be positive, got {value}")
        self.optimizer.learning_rate = value  # assigns the optimizer's variable

    def _train_step(
        self,
        observations: tf.Tensor,
        actions: tf.Tensor,
        behaviour_logits: tf.Tensor,
        rewards: tf.Tensor,
        done: tf.Tensor,
        phantom: tf.Tensor,
    ) -> dict[str, tf.Tensor]:
        c = self.config
        steps, batch = tf.shape(observations)[0], tf.shape(observations)[1]
        flat = tf.reshape(observations, tf.concat([[steps * batch], tf.shape(observations)[2:]], 0))
        with tf.GradientTape() as tape:
            logits, values = self.network(flat)
            losses = impala_loss(
                logits=tf.reshape(logits, [steps, batch, -1]),
                values=tf.reshape(values, [steps, batch]),
                behaviour_logits=behaviour_logits,
                actions=actions,
                rewards=clip_rewards(tf.cast(rewards, tf.float32), c.reward_clipping),
                done=done,
                phantom=phantom,
                discount=c.discount,
                baseline_cost=c.baseline_cost,
                entropy_cost=c.entropy_cost,
                clip_rho_threshold=c.clip_rho_threshold,
                clip_pg_rho_threshold=c.clip_pg_rho_threshold,
                lambda_=c.lambda_,
            )
        variables = self.network.trainable_variables
        gradients = tape.gradient(losses.total, variables)
        self.optimizer.apply_gradients(zip(gradients, variables))
        return {
            "losses/total": losses.total,
            "losses/pg": losses.policy_gradient,
            "losses/baseline": losses.baseline,
            "losses/entropy": losses.entropy,
            "losses/grad_norm": tf.linalg.global_norm(gradients),
        }
