"""The V-trace agent: network, batched inference and the compiled train step."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aioseed.algos.agent import zero_state
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.loss import clip_rewards, impala_loss
from aioseed.algos.optimizer import LearningRateControl, adam
from aioseed.algos.networks import PolicyValue, build_policy_value
from aioseed.algos.recurrent import RecurrentPolicyValue
from aioseed.spec import EnvSpec


def build_network(spec: EnvSpec, config: ImpalaConfig) -> PolicyValue | RecurrentPolicyValue:
    base = build_policy_value(
        spec,
        config.network,
        config.hidden_sizes,
        shared_torso=config.shared_torso or config.lstm_size > 0,
        activation=config.activation,
    )
    return RecurrentPolicyValue(base, config.lstm_size) if config.lstm_size else base


class PolicyModule(tf.Module):
    """The exported policy: ``act(observations, *state) -> {action, logits, value, **next_state}``.

    Feedforward networks have no state. With an LSTM core the state is
    ``core_h, core_c`` (zeros at an episode's start). Loadable without aioseed.
    """

    def __init__(self, network: PolicyValue | RecurrentPolicyValue, spec: EnvSpec, jit_compile: bool = False) -> None:
        super().__init__(name="aioseed_policy")
        self.network = network
        self.observation_shape = tf.constant(spec.observation_shape, tf.int64)
        self.num_actions = tf.constant(spec.num_actions, tf.int64)
        shapes = network.state_shapes()
        self.state_names = tuple(shapes)
        signature = [
            tf.TensorSpec([None, *spec.observation_shape], tf.as_dtype(spec.observation_dtype), name="observations"),
            *(tf.TensorSpec([None, *shape], tf.float32, name=name) for name, shape in shapes.items()),
        ]
        self.act = tf.function(self._act, input_signature=signature, jit_compile=jit_compile)
        self.greedy = tf.function(self._greedy, input_signature=signature, jit_compile=jit_compile)

    def _forward(self, observations: tf.Tensor, state: tuple[tf.Tensor, ...]) -> dict[str, tf.Tensor]:
        logits, value, next_state = self.network.step(observations, dict(zip(self.state_names, state)))
        return {"logits": logits, "value": value, **next_state}

    def _act(self, observations: tf.Tensor, *state: tf.Tensor) -> dict[str, tf.Tensor]:
        out = self._forward(observations, state)
        return {"action": tf.random.categorical(out["logits"], 1, dtype=tf.int32)[:, 0], **out}

    def _greedy(self, observations: tf.Tensor, *state: tf.Tensor) -> dict[str, tf.Tensor]:
        out = self._forward(observations, state)
        return {"action": tf.argmax(out["logits"], -1, output_type=tf.int32), **out}


class ImpalaAgent(LearningRateControl):
    """V-trace actor-critic, feedforward or with an LSTM core. Implements ``aioseed.algos.agent.Agent``."""

    burn_in = 0
    """Unroll steps that only warm up recurrent state (none: V-trace learns from every step)."""

    def __init__(self, spec: EnvSpec, config: ImpalaConfig, device: str = "/CPU:0") -> None:
        self.spec = spec
        self.config = config
        self.device = device
        with tf.device(device):
            self.network = build_network(spec, config)
            self.network.step(np.zeros((1, *spec.observation_shape), spec.observation_dtype), zero_state(self.state_columns(), 1))
            self.optimizer = adam(
                config.learning_rate, config.adam_epsilon, config.max_grad_norm, self.network.trainable_variables
            )
        self.policy = PolicyModule(self.network, spec, config.jit_compile)
        self._train = tf.function(self._train_step, jit_compile=config.jit_compile)

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {"action": ((), np.int32), "logits": ((self.spec.num_actions,), np.float32)}

    def state_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {name: (shape, np.float32) for name, shape in self.network.state_shapes().items()}

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        with tf.device(self.device):
            out = self.policy.act(observations, *(state[name] for name in self.policy.state_names))
        outputs = {"action": out["action"].numpy(), "logits": out["logits"].numpy()}
        return outputs, {name: out[name].numpy() for name in self.policy.state_names}

    def train_step(self, batch: Mapping[str, np.ndarray]) -> dict[str, float]:
        with tf.device(self.device):
            metrics = self._train(
                batch["observation"],
                batch["action"],
                batch["logits"],
                batch["reward"],
                batch["done"],
                batch["phantom"],
                {name: batch[name] for name in self.policy.state_names},
            )
        return {name: float(value) for name, value in metrics.items()}

    def checkpoint_objects(self) -> dict[str, Any]:
        return {"network": self.network, "optimizer": self.optimizer}

    def _train_step(
        self,
        observations: tf.Tensor,
        actions: tf.Tensor,
        behaviour_logits: tf.Tensor,
        rewards: tf.Tensor,
        done: tf.Tensor,
        phantom: tf.Tensor,
        state: dict[str, tf.Tensor],
    ) -> dict[str, tf.Tensor]:
        c = self.config
        with tf.GradientTape() as tape:
            # An episode starts at a done row that is not an episode's final observation (as at inference).
            logits, values = self.network.unroll(observations, state, done & ~phantom)
            losses = impala_loss(
                logits=logits,
                values=values,
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
