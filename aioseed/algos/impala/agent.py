"""The V-trace agent: network, batched inference and the compiled train step (one pass, or PPO-style reuse)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from aioseed.algos.agent import SKIPPED
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.loss import (
    ImpalaLosses,
    SurrogateLosses,
    clipped_surrogate_loss,
    impala_loss,
    normalize,
    targets,
)
from aioseed.algos.rewards import clip_rewards
from aioseed.algos.networks import PolicyValue, build_policy_value
from aioseed.algos.optimizer import LearningRateControl, make_optimizer, minimize
from aioseed.algos.recurrent import RecurrentPolicyValue
from aioseed.algos.replicas import Replicas, replica_sum
from aioseed.spec import EnvSpec

PREVIOUS_ACTION = "prev_action"
"""State column of the previous action (one-hot; zero at an episode's start) with ``previous_action_reward``."""


def build_network(spec: EnvSpec, config: ImpalaConfig) -> PolicyValue | RecurrentPolicyValue:
    base = build_policy_value(
        spec,
        config.network,
        config.hidden_sizes,
        shared_torso=config.shared_torso or config.lstm_size > 0 or config.previous_action_reward,
        activation=config.activation,
    )
    return RecurrentPolicyValue(base, config.lstm_size) if config.lstm_size else base


def step_extras(previous_action: tf.Tensor, reward: tf.Tensor) -> tf.Tensor:
    """<float32>[..., A] one-hot previous action and <float32>[...] reward -> <float32>[..., A + 1]."""
    return tf.concat([previous_action, tf.cast(reward, tf.float32)[..., None]], -1)


def unroll_extras(
    first_previous_action: tf.Tensor, actions: tf.Tensor, rewards: tf.Tensor, starts: tf.Tensor, num_actions: int
) -> tf.Tensor:
    """The inference-time extras of every step of ``[T + 1, B]`` unrolls.

    Args:
      first_previous_action: <float32>[B, A] the previous action stored with each unroll's first step.
      actions: <int32>[T + 1, B] a_t.
      rewards: <float32>[T + 1, B] the (clipped) reward leading to step t.
      starts: <bool>[T + 1, B] an episode starts at step t: previous action and reward are zero there.
    """
    previous = tf.concat([first_previous_action[None], tf.one_hot(actions[:-1], num_actions, dtype=tf.float32)], 0)
    keep = 1.0 - tf.cast(starts, tf.float32)
    # Step 0's stored previous action was already zeroed at inference where it started an episode.
    previous = previous * tf.concat([tf.ones_like(keep[:1]), keep[1:]], 0)[..., None]
    return step_extras(previous, rewards * keep)


class PolicyModule(tf.Module):
    """The exported policy: ``act(observations, *state[, reward]) -> {action, logits, value, **next_state}``.

    Feedforward networks have no state. With an LSTM core the state is ``core_h, core_c``;
    with ``previous_action_reward`` it also holds ``prev_action`` (one-hot), and ``reward``
    is the reward that led to the observation (unclipped; the policy clips it as in training). All are zero at an episode's start. Loadable
    without aioseed.
    """

    def __init__(self, network: PolicyValue | RecurrentPolicyValue, spec: EnvSpec, config: ImpalaConfig) -> None:
        super().__init__(name="aioseed_policy")
        self.network = network
        self.observation_shape = tf.constant(spec.observation_shape, tf.int64)
        self.num_actions = tf.constant(spec.num_actions, tf.int64)
        self._num_actions = spec.num_actions
        self._reward_clipping = (config.reward_clipping, config.reward_clip)
        shapes = dict(network.state_shapes())
        self.extras = config.previous_action_reward
        if self.extras:
            shapes[PREVIOUS_ACTION] = (spec.num_actions,)
        self.state_names = tuple(shapes)
        signature = [
            tf.TensorSpec([None, *spec.observation_shape], tf.as_dtype(spec.observation_dtype), name="observations"),
            *(tf.TensorSpec([None, *shape], tf.float32, name=name) for name, shape in shapes.items()),
            *([tf.TensorSpec([None], tf.float32, name="reward")] if self.extras else []),
        ]
        self.act = tf.function(self._act, input_signature=signature, jit_compile=config.jit_compile)
        self.greedy = tf.function(self._greedy, input_signature=signature, jit_compile=config.jit_compile)

    def _forward(self, observations: tf.Tensor, inputs: tuple[tf.Tensor, ...]) -> dict[str, tf.Tensor]:
        state = dict(zip(self.state_names, inputs))
        extras = None
        if self.extras:
            extras = step_extras(state.pop(PREVIOUS_ACTION), clip_rewards(inputs[-1], *self._reward_clipping))
        logits, value, next_state = self.network.step(observations, state, extras)
        return {"logits": logits, "value": value, **next_state}

    def _with_action(self, out: dict[str, tf.Tensor], action: tf.Tensor) -> dict[str, tf.Tensor]:
        if self.extras:
            out[PREVIOUS_ACTION] = tf.one_hot(action, self._num_actions, dtype=tf.float32)
        return {"action": action, **out}

    def _act(self, observations: tf.Tensor, *inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        out = self._forward(observations, inputs)
        return self._with_action(out, tf.random.categorical(out["logits"], 1, dtype=tf.int32)[:, 0])

    def _greedy(self, observations: tf.Tensor, *inputs: tf.Tensor) -> dict[str, tf.Tensor]:
        out = self._forward(observations, inputs)
        return self._with_action(out, tf.argmax(out["logits"], -1, output_type=tf.int32))


COLUMNS = ("observation", "action", "logits", "reward", "done", "phantom")
"""The unroll columns a train step reads (time-major ``[T + 1, B, ...]``), besides the state columns."""


class ImpalaAgent(LearningRateControl):
    """V-trace actor-critic, feedforward or with an LSTM core. Implements ``aioseed.algos.agent.Agent``.

    One pass (the default) is IMPALA: one update per batch, the loss and its V-trace
    targets from the same forward pass. With sample reuse (``ImpalaConfig.reuses_samples``)
    the targets are computed once per batch by the network as it is then (the proximal
    policy), followed by ``epochs`` x ``minibatches`` updates on shuffled groups of unrolls.
    Each update is data-parallel over ``replicas``' training devices (``aioseed.algos.replicas``).
    """

    burn_in = 0
    """Unroll steps that only warm up recurrent state (none: V-trace learns from every step)."""
    uses_replay = False
    """Trains once on each unroll, in arrival order, from the bounded queue."""

    def __init__(
        self, spec: EnvSpec, config: ImpalaConfig, replicas: Replicas | None = None, seed: int | None = None
    ) -> None:
        self.spec = spec
        self.config = config
        self.replicas = replicas or Replicas()
        if config.jit_compile and self.replicas.count > 1:
            raise ValueError("impala.jit_compile trains on one device only; drop it or name one training device")
        self._rng = np.random.default_rng(seed)
        with self.replicas.scope():
            self.network = build_network(spec, config)
            extras = np.zeros((1, spec.num_actions + 1), np.float32) if config.previous_action_reward else None
            core = {name: np.zeros((1, *shape), np.float32) for name, shape in self.network.state_shapes().items()}
            self.network.step(np.zeros((1, *spec.observation_shape), spec.observation_dtype), core, extras)
            self.optimizer = make_optimizer(
                config.optimizer,
                config.learning_rate,
                config.max_grad_norm,
                self.network.trainable_variables,
                epsilon=config.rmsprop_epsilon if config.optimizer == "rmsprop" else config.adam_epsilon,
                beta_1=config.adam_beta1,
                beta_2=config.adam_beta2,
                rho=config.rmsprop_decay,
                momentum=config.rmsprop_momentum,
            )
            self.init_learning_rate(config.learning_rate, config.lr_schedule, config.lr_frames, config.lr_final_fraction)
        self.policy = PolicyModule(self.network, spec, config)
        self._state_axes = {name: 0 for name in self.policy.state_names}
        compile_options = {"jit_compile": config.jit_compile, "reduce_retracing": True}
        self._train = tf.function(self.update, **compile_options)
        self._targets = tf.function(self._compute_targets, **compile_options)
        self._update = tf.function(self._update_step, **compile_options)

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {"action": ((), np.int32), "logits": ((self.spec.num_actions,), np.float32)}

    def state_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        columns = {name: (shape, np.float32) for name, shape in self.network.state_shapes().items()}
        if self.config.previous_action_reward:
            columns[PREVIOUS_ACTION] = ((self.spec.num_actions,), np.float32)
        return columns

    def _policy_inputs(self, state: Mapping[str, np.ndarray], rewards: np.ndarray | None, rows: int) -> list:
        inputs = [state[name] for name in self.policy.state_names]
        if self.config.previous_action_reward:
            inputs.append(np.zeros(rows, np.float32) if rewards is None else np.asarray(rewards, np.float32))
        return inputs

    def _clip(self, rewards: np.ndarray | tf.Tensor) -> tf.Tensor:
        return clip_rewards(tf.cast(rewards, tf.float32), self.config.reward_clipping, self.config.reward_clip)

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """``rewards``: <float32>[B] the reward that led to each row, zero where an episode starts."""
        with tf.device(self.replicas.inference_device()):
            out = self.policy.act(observations, *self._policy_inputs(state, rewards, len(observations)))
        outputs = {"action": out["action"].numpy(), "logits": out["logits"].numpy()}
        return outputs, {name: out[name].numpy() for name in self.policy.state_names}

    def train_step(self, batch: Mapping[str, np.ndarray]) -> dict[str, float]:
        """One pass: one update. Sample reuse: ``epochs`` x ``minibatches`` updates (metrics averaged;
        ``updates`` says how many were applied, ``SKIPPED`` how many were not)."""
        columns = {name: batch[name] for name in (*COLUMNS, *self.policy.state_names)}
        if not self.config.reuses_samples:
            return {name: float(value) for name, value in self._train(self._split(columns)).items()}
        proximal = {name: value.numpy() for name, value in self._targets(self._split(columns)).items()}
        totals: dict[str, float] = {}
        for _ in range(self.config.epochs):
            order = self._rng.permutation(batch["action"].shape[1])
            for part in np.array_split(order, self.config.minibatches):
                minibatch = {
                    name: column[part] if name in self._state_axes else column[:, part]
                    for name, column in {**columns, **proximal}.items()
                }
                for name, value in self._update(self._split(minibatch)).items():
                    totals[name] = totals.get(name, 0.0) + float(value)
        updates = self.config.epochs * self.config.minibatches
        skipped = totals.pop(SKIPPED)
        means = {name: value / updates for name, value in totals.items()}
        return {**means, SKIPPED: skipped, "updates": float(updates - skipped)}

    def _split(self, columns: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """Each training replica's share: time-major columns along axis 1, state columns along axis 0."""
        return self.replicas.split(columns, self._state_axes)

    def checkpoint_objects(self) -> dict[str, Any]:
        return {"network": self.network, "optimizer": self.optimizer, "base_learning_rate": self.base_learning_rate}

    def _unroll(self, inputs: Mapping[str, tf.Tensor], rewards: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Logits and values of ``[T + 1, B]`` unrolls, replaying inference's inputs and state resets
        (``rewards``: the clipped ones)."""
        # An episode starts at a done row that is not an episode's final observation (as at inference).
        starts = inputs["done"] & ~inputs["phantom"]
        core = {name: inputs[name] for name in self.network.state_shapes()}
        extras = None
        if self.config.previous_action_reward:
            extras = unroll_extras(inputs[PREVIOUS_ACTION], inputs["action"], rewards, starts, self.spec.num_actions)
        return self.network.unroll(inputs["observation"], core, starts, extras)

    def update(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        """One V-trace update on time-major ``[T + 1, B]`` tensors (``COLUMNS`` and the state columns),
        traced inside a ``tf.function``: ``train_step``'s, and Anakin's (``aioseed.anakin.loop``)."""
        return minimize(self.replicas, self.optimizer, self._impala_loss, self.network.trainable_variables, inputs)

    def _impala_loss(self, inputs: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        """One replica's share: the IMPALA loss and its terms."""
        c = self.config
        rewards = self._clip(inputs["reward"])
        logits, values = self._unroll(inputs, rewards)
        losses = impala_loss(
            logits=logits,
            values=values,
            behaviour_logits=inputs["logits"],
            actions=inputs["action"],
            rewards=rewards,
            done=inputs["done"],
            phantom=inputs["phantom"],
            discount=c.discount,
            baseline_cost=c.baseline_cost,
            entropy_cost=c.entropy_cost,
            clip_rho_threshold=c.clip_rho_threshold,
            clip_pg_rho_threshold=c.clip_pg_rho_threshold,
            lambda_=c.lambda_,
            normalize_advantages=c.normalize_advantages,
            cross_replica_sum=replica_sum,
        )
        return losses.total, self._loss_metrics(losses), {}

    @staticmethod
    def _loss_metrics(losses: ImpalaLosses | SurrogateLosses) -> dict[str, tf.Tensor]:
        metrics = {
            "losses/total": losses.total,
            "losses/pg": losses.policy_gradient,
            "losses/baseline": losses.baseline,
            "losses/entropy": losses.entropy,
        }
        if isinstance(losses, SurrogateLosses):
            metrics.update({"losses/clip_fraction": losses.clip_fraction, "losses/approx_kl": losses.approx_kl})
        return metrics

    def _compute_targets(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        """The proximal policy's log-probabilities, advantages and value targets of the T transitions
        (``[T, B]``, computed on every replica's share and concatenated)."""
        return self.replicas.concat(self.replicas.run(self._replica_targets, inputs), axis=1)

    def _replica_targets(self, inputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        c = self.config
        rewards = self._clip(inputs["reward"])
        logits, values = self._unroll(inputs, rewards)
        actions = inputs["action"]
        result = targets(
            logits,
            values,
            inputs["logits"],
            actions,
            rewards,
            inputs["done"],
            inputs["phantom"],
            discount=c.discount,
            kind=c.targets,
            lambda_=c.lambda_,
            clip_rho_threshold=c.clip_rho_threshold,
            clip_pg_rho_threshold=c.clip_pg_rho_threshold,
        )
        log_policy = tf.nn.log_softmax(logits[:-1])
        log_probs = tf.reduce_sum(log_policy * tf.one_hot(actions[:-1], self.spec.num_actions), -1)
        return {
            "log_probs": log_probs,
            "advantages": result.advantages,
            "value_targets": result.value_targets,
            "valid": result.valid,
        }

    def _update_step(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        """One update of the clipped surrogate on a minibatch of unrolls and their proximal targets."""
        return minimize(self.replicas, self.optimizer, self._surrogate_loss, self.network.trainable_variables, inputs)

    def _surrogate_loss(self, inputs: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        c = self.config
        valid = inputs["valid"]
        advantages = inputs["advantages"]
        if c.normalize_advantages:  # over the whole minibatch, all replicas' shares together
            advantages = normalize(advantages, valid, cross_replica_sum=replica_sum)
        logits, values = self._unroll(inputs, self._clip(inputs["reward"]))
        losses = clipped_surrogate_loss(
            logits=logits[:-1],
            values=values[:-1],
            proximal_log_probs=inputs["log_probs"],
            actions=inputs["action"][:-1],
            advantages=advantages,
            value_targets=inputs["value_targets"],
            valid=valid,
            clip_epsilon=c.ppo_clip,
            baseline_cost=c.baseline_cost,
            entropy_cost=c.entropy_cost,
        )
        return losses.total, self._loss_metrics(losses), {}
