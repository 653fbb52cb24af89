"""The R2D2 agent: an LSTM Q-network with a dueling head, epsilon-greedy inference per env slot,
burn-in, the double-Q train step on replayed sequences, a periodically copied target network, and the
priorities of new sequences from the Q values inference acted with."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aioseed.algos.agent import SKIPPED, no_callback, zero_state
from aioseed.algos.extras import PREVIOUS_ACTION, state_columns, step_extras, unroll_extras
from aioseed.algos.networks import Layers, PolicyValue, build_policy_value
from aioseed.algos.optimizer import LearningRateControl, adam, minimize
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.algos.r2d2.loss import dueling_q, inference_priorities, r2d2_loss
from aioseed.algos.recurrent import RecurrentPolicyValue
from aioseed.algos.replicas import Replicas
from aioseed.algos.rewards import clip_rewards
from aioseed.spec import EnvSpec
from aioseed.types import Unroll

Q_TAKEN = "q_taken"
"""Output column of Q(x_t, a_t) as inference computed it, kept for ``R2D2Config.initial_priority`` inference."""


class RecurrentDuelingQ(RecurrentPolicyValue):
    """R2D2's Q-network: torso -> LSTM -> two heads, combined by ``dueling_q`` into Q(x, .).

    With ``hidden`` units each stream is SEED's: a ReLU layer of its own, then the advantages A(x, .) (no bias)
    or the value V(x). Without, it reuses the actor-critic nets' heads on the LSTM's output: the one that holds
    policy logits there (``PolicyValue.policy``) holds the advantages here. Use ``q_step`` and ``q_unroll``,
    which return Q values; ``extras`` join the LSTM's input.
    """

    def __init__(self, base: PolicyValue, units: int, num_actions: int, hidden: int = 0, **kwargs) -> None:
        super().__init__(base, units, **kwargs)
        self.hidden = hidden
        if hidden:
            kernel = base.layer_options.kernel
            self.advantage_stream = keras.Sequential([
                keras.layers.Dense(hidden, activation="relu", kernel_initializer=kernel()),
                keras.layers.Dense(num_actions, use_bias=False, kernel_initializer=kernel(0.01)),
            ])
            self.value_stream = keras.Sequential([
                keras.layers.Dense(hidden, activation="relu", kernel_initializer=kernel()),
                keras.layers.Dense(1, kernel_initializer=kernel(1.0)),
            ])

    def heads(self, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Advantages <float32>[B, A] and value [B] from the core's outputs."""
        if not self.hidden:
            return super().heads(outputs)
        return self.advantage_stream(outputs), tf.squeeze(self.value_stream(outputs), -1)

    def q_step(
        self, observations: tf.Tensor, state: dict[str, tf.Tensor], extras: tf.Tensor | None = None
    ) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """<float32>[B, A] Q values of one step, and the next state."""
        advantages, value, next_state = self.step(observations, state, extras)
        return dueling_q(advantages, value), next_state

    def q_unroll(
        self, observations: tf.Tensor, state: dict[str, tf.Tensor], starts: tf.Tensor, extras: tf.Tensor | None = None
    ) -> tf.Tensor:
        """<float32>[T, B, A] Q values over an unroll from ``state`` (reset where ``starts``)."""
        return dueling_q(*self.unroll(observations, state, starts, extras))


def build_q_network(spec: EnvSpec, config: R2D2Config, precision: str = "float32") -> RecurrentDuelingQ:
    base = build_policy_value(spec, config.network, config.hidden_sizes, shared_torso=True, layers=Layers(precision=precision))
    return RecurrentDuelingQ(base, config.lstm_size, spec.num_actions, config.dueling_hidden)


class R2D2Agent(LearningRateControl):
    """Implements ``aioseed.algos.agent.Agent`` with replay: ``train_step`` also returns priorities."""

    uses_replay = True

    def __init__(
        self, spec: EnvSpec, config: R2D2Config, replicas: Replicas | None = None, precision: str = "float32"
    ) -> None:
        """``precision``: the torso's (``aioseed.algos.networks.Layers``)."""
        self.spec = spec
        self.config = config
        self.replicas = replicas or Replicas()
        self.burn_in = config.burn_in
        with self.replicas.scope():
            self.network = build_q_network(spec, config, precision)
            self.target_network = build_q_network(spec, config, precision)
            extras = tf.zeros([1, spec.num_actions + 1]) if config.previous_action_reward else None
            for network in (self.network, self.target_network):
                network.step(np.zeros((1, *spec.observation_shape), spec.observation_dtype), zero_state(self.state_columns(), 1), extras)
            self.update_target()
            self.optimizer = adam(
                config.learning_rate, config.adam_epsilon, config.max_grad_norm, self.network.trainable_variables
            )
            self.init_learning_rate(config.learning_rate)
        observations = tf.TensorSpec([None, *spec.observation_shape], tf.as_dtype(spec.observation_dtype))
        state = tf.TensorSpec([None, config.lstm_size], tf.float32)
        rows = tf.TensorSpec([None], tf.float32)
        previous = tf.TensorSpec([None, spec.num_actions], tf.float32)
        self._act = tf.function(self._act_step, input_signature=[observations, state, state, rows, previous, rows])
        self._train = tf.function(self._train_step)
        sequences = [tf.TensorSpec([None, None], dtype) for dtype in (tf.float32, tf.float32, tf.bool, tf.bool)]
        self._priorities = tf.function(self._inference_priorities, input_signature=sequences)

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        columns: dict[str, tuple[tuple[int, ...], Any]] = {"action": ((), np.int32)}
        if self.config.initial_priority == "inference":
            columns[Q_TAKEN] = ((), np.float32)
        return columns

    def state_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return state_columns(self.network.state_shapes(), self.spec.num_actions if self.config.previous_action_reward else None)

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Epsilon-greedy on Q: env slot i explores at eps_i (``R2D2Config.epsilons``), evaluation envs
        at ``eval_epsilon``. ``rewards``: <float32>[B] the reward that led to each row, zero where an episode
        starts (an input of the network with ``previous_action_reward``)."""
        rows = len(observations)
        epsilon = self.config.epsilons(np.arange(rows) if slots is None else slots)
        if evaluation is not None:
            epsilon = np.where(evaluation, np.float32(self.config.eval_epsilon), epsilon)
        previous = state.get(PREVIOUS_ACTION, np.zeros((rows, self.spec.num_actions), np.float32))
        reward = np.zeros(rows, np.float32) if rewards is None else np.asarray(rewards, np.float32)
        with tf.device(self.replicas.inference_device()):
            action, q_taken, h, c, taken = self._act(observations, state["core_h"], state["core_c"], epsilon, previous, reward)
        outputs = {"action": action.numpy()}
        if self.config.initial_priority == "inference":
            outputs[Q_TAKEN] = q_taken.numpy()
        next_state = {"core_h": h.numpy(), "core_c": c.numpy()}
        if self.config.previous_action_reward:
            next_state[PREVIOUS_ACTION] = taken.numpy()
        return outputs, next_state

    def _act_step(
        self, observations: tf.Tensor, h: tf.Tensor, c: tf.Tensor, epsilon: tf.Tensor, previous: tf.Tensor, reward: tf.Tensor
    ) -> tuple[tf.Tensor, ...]:
        """The action, its Q value, the next core state and the action one-hot (the next previous action)."""
        extras = None
        if self.config.previous_action_reward:
            extras = step_extras(previous, clip_rewards(reward, self.config.reward_clipping))
        q, state = self.network.q_step(observations, {"core_h": h, "core_c": c}, extras)
        greedy = tf.argmax(q, -1, output_type=tf.int32)
        rows = tf.shape(observations)[0]
        random = tf.random.uniform([rows], 0, self.spec.num_actions, dtype=tf.int32)
        action = tf.where(tf.random.uniform([rows]) < epsilon, random, greedy)
        taken = tf.one_hot(action, self.spec.num_actions)
        return action, tf.gather(q, action, batch_dims=1), state["core_h"], state["core_c"], taken

    def initial_priorities(self, unrolls: Sequence[Unroll]) -> np.ndarray | None:
        """<float32>[len(unrolls)] new unrolls' priorities from the Q values inference acted with (SEED's), over
        their steps after burn-in, NaN where a Q value was not finite (the replay gives those its largest); None
        with ``initial_priority`` max (the largest for all)."""
        if self.config.initial_priority != "inference" or not unrolls:
            return None
        learn = slice(self.burn_in, None)
        columns = [np.stack([unroll[name][learn] for unroll in unrolls], 1) for name in (Q_TAKEN, "reward", "done", "phantom")]
        priorities = self._priorities(*columns).numpy()
        return np.where(np.isfinite(priorities), priorities, np.nan)

    def _inference_priorities(self, q_taken: tf.Tensor, reward: tf.Tensor, done: tf.Tensor, phantom: tf.Tensor) -> tf.Tensor:
        c = self.config
        return inference_priorities(
            q_taken, clip_rewards(reward, c.reward_clipping), done, phantom, c.discount, c.n_steps, c.value_rescale_eps, c.priority_eta
        )

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = no_callback) -> dict[str, Any]:
        """One update on ``[burn_in + T + 1, B]`` sequences weighted by ``batch["weights"]`` (``on_update``:
        called once it is applied).

        Returns scalar metrics plus ``"priorities"``: <float32>[B], the sequences' new priorities.
        """
        columns = ("observation", "action", "reward", "done", "phantom", "weights", *self.state_columns())
        # Time-major columns split along axis 1; the per-sequence ones along axis 0.
        per_sequence = {name: 0 for name in ("weights", *self.state_columns())}
        out = self._train(self.replicas.split({name: batch[name] for name in columns}, per_sequence))
        # The optimizer's step counter is checkpointed, so the schedule survives restarts.
        if int(self.optimizer.iterations.numpy()) % self.config.target_update_period == 0:
            self.update_target()
        metrics: dict[str, Any] = {name: float(value) for name, value in out.items() if name != "priorities"}
        metrics["priorities"] = out["priorities"].numpy()
        if not metrics[SKIPPED]:
            on_update()
        return metrics

    def change_settings(self, config: R2D2Config) -> None:
        """Between train steps: ``config``'s live fields (``aioseed.algos.r2d2.builder.LIVE``) apply from the next
        inference batch (the epsilons) and train step (the target period)."""
        self.config = config

    def update_target(self) -> None:
        for target, online in zip(self.target_network.weights, self.network.weights):
            target.assign(online)

    def _train_step(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        return minimize(self.replicas, self.optimizer, self._loss, self.network.trainable_variables, inputs)

    def _loss(self, inputs: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        """One replica's share of sequences: the loss, its metrics and the sequences' new priorities."""
        c, learn = self.config, slice(self.burn_in, None)
        q, target_q = self._q_values(inputs)
        losses = r2d2_loss(
            q=q,
            target_q=tf.stop_gradient(target_q),
            actions=inputs["action"][learn],
            rewards=self._rewards(inputs)[learn],
            done=inputs["done"][learn],
            phantom=inputs["phantom"][learn],
            importance_weights=inputs["weights"],
            discount=c.discount,
            n_steps=c.n_steps,
            eps=c.value_rescale_eps,
            priority_eta=c.priority_eta,
            reduction=c.loss_reduction,
        )
        metrics = {
            "losses/total": losses.total,
            "losses/td_abs": tf.reduce_mean(tf.abs(losses.td)),
            "learner/q_mean": tf.reduce_mean(q),
        }
        return losses.total, metrics, {"priorities": losses.priorities}

    def _q_values(self, inputs: Mapping[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
        """The online and target networks' Q values <float32>[T + 1, B, A] of the steps after burn-in, from the
        stored state warmed up over the burn-in steps (no gradient reaches them), with the inputs inference saw."""
        burn, observations = self.burn_in, inputs["observation"]
        state = {name: inputs[name] for name in self.network.state_shapes()}
        starts = inputs["done"] & ~inputs["phantom"]
        extras = burn_extras = None
        if self.config.previous_action_reward:
            one_hot = functools.partial(tf.one_hot, depth=self.spec.num_actions)
            extras = unroll_extras(inputs[PREVIOUS_ACTION], inputs["action"], self._rewards(inputs), starts, one_hot)
            burn_extras, extras = extras[:burn], extras[burn:]
        online_state, target_state = state, state
        if burn > 0:
            online_state = tf.nest.map_structure(
                tf.stop_gradient, self.network.burn_in(observations[:burn], state, starts[:burn], burn_extras)
            )
            target_state = self.target_network.burn_in(observations[:burn], state, starts[:burn], burn_extras)
        learn = slice(burn, None)
        q = self.network.q_unroll(observations[learn], online_state, starts[learn], extras)
        return q, self.target_network.q_unroll(observations[learn], target_state, starts[learn], extras)

    def _rewards(self, inputs: Mapping[str, tf.Tensor]) -> tf.Tensor:
        """<float32>[T + 1, B] the stored rewards, clipped as configured."""
        return clip_rewards(tf.cast(inputs["reward"], tf.float32), self.config.reward_clipping)

    def checkpoint_objects(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "target_network": self.target_network,
            "optimizer": self.optimizer,
            "base_learning_rate": self.base_learning_rate,
        }
