"""The R2D2 agent: an LSTM Q-network with a dueling head, epsilon-greedy inference per env slot,
burn-in, the double-Q train step on replayed sequences, and a periodically copied target network."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from aioseed.algos.agent import SKIPPED, no_callback, zero_state
from aioseed.algos.networks import Layers, build_policy_value
from aioseed.algos.optimizer import LearningRateControl, adam, minimize
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.algos.r2d2.loss import dueling_q, r2d2_loss
from aioseed.algos.recurrent import RecurrentPolicyValue
from aioseed.algos.replicas import Replicas
from aioseed.algos.rewards import clip_rewards
from aioseed.spec import EnvSpec


class RecurrentDuelingQ(RecurrentPolicyValue):
    """R2D2's Q-network: torso -> LSTM -> two heads, combined by ``dueling_q`` into Q(x, .).

    It reuses the actor-critic nets' layers (so the torsos and checkpoints are shared): the head
    that holds policy logits there (``PolicyValue.policy``) holds the advantages A(x, .) here,
    and the value head V(x). Use ``q_step`` and ``q_unroll``, which return Q values.
    """

    def q_step(self, observations: tf.Tensor, state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        """<float32>[B, A] Q values of one step, and the next state."""
        advantages, value, next_state = self.step(observations, state)
        return dueling_q(advantages, value), next_state

    def q_unroll(self, observations: tf.Tensor, state: dict[str, tf.Tensor], starts: tf.Tensor) -> tf.Tensor:
        """<float32>[T, B, A] Q values over an unroll from ``state`` (reset where ``starts``)."""
        return dueling_q(*self.unroll(observations, state, starts))


def build_q_network(spec: EnvSpec, config: R2D2Config, precision: str = "float32") -> RecurrentDuelingQ:
    base = build_policy_value(spec, config.network, config.hidden_sizes, shared_torso=True, layers=Layers(precision=precision))
    return RecurrentDuelingQ(base, config.lstm_size)


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
            for network in (self.network, self.target_network):
                network.step(np.zeros((1, *spec.observation_shape), spec.observation_dtype), zero_state(self.state_columns(), 1))
            self.update_target()
            self.optimizer = adam(
                config.learning_rate, config.adam_epsilon, config.max_grad_norm, self.network.trainable_variables
            )
            self.init_learning_rate(config.learning_rate)
        observations = tf.TensorSpec([None, *spec.observation_shape], tf.as_dtype(spec.observation_dtype))
        state = tf.TensorSpec([None, config.lstm_size], tf.float32)
        epsilon = tf.TensorSpec([None], tf.float32)
        self._act = tf.function(self._act_step, input_signature=[observations, state, state, epsilon])
        self._train = tf.function(self._train_step)

    def output_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {"action": ((), np.int32)}

    def state_columns(self) -> Mapping[str, tuple[tuple[int, ...], Any]]:
        return {name: (shape, np.float32) for name, shape in self.network.state_shapes().items()}

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Epsilon-greedy on Q: env slot i explores at eps_i (``R2D2Config.epsilons``), evaluation envs
        at ``eval_epsilon``. ``rewards`` are not an input of the Q-network."""
        epsilon = self.config.epsilons(np.arange(len(observations)) if slots is None else slots)
        if evaluation is not None:
            epsilon = np.where(evaluation, np.float32(self.config.eval_epsilon), epsilon)
        with tf.device(self.replicas.inference_device()):
            action, h, c = self._act(observations, state["core_h"], state["core_c"], epsilon)
        return {"action": action.numpy()}, {"core_h": h.numpy(), "core_c": c.numpy()}

    def _act_step(
        self, observations: tf.Tensor, h: tf.Tensor, c: tf.Tensor, epsilon: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        q, state = self.network.q_step(observations, {"core_h": h, "core_c": c})
        greedy = tf.argmax(q, -1, output_type=tf.int32)
        rows = tf.shape(observations)[0]
        random = tf.random.uniform([rows], 0, self.spec.num_actions, dtype=tf.int32)
        action = tf.where(tf.random.uniform([rows]) < epsilon, random, greedy)
        return action, state["core_h"], state["core_c"]

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = no_callback) -> dict[str, Any]:
        """One update on ``[burn_in + T + 1, B]`` sequences weighted by ``batch["weights"]`` (``on_update``:
        called once it is applied).

        Returns scalar metrics plus ``"priorities"``: <float32>[B], the sequences' new priorities.
        """
        columns = ("observation", "action", "reward", "done", "phantom", "weights", *self.network.state_shapes())
        # Time-major columns split along axis 1; the per-sequence ones along axis 0.
        per_sequence = {name: 0 for name in ("weights", *self.network.state_shapes())}
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
        c, burn = self.config, self.burn_in
        observations, done, phantom = inputs["observation"], inputs["done"], inputs["phantom"]
        state = {name: inputs[name] for name in self.network.state_shapes()}
        starts = done & ~phantom
        online_state, target_state = state, state
        if burn > 0:  # warm the recurrent state up from the stored one; no gradient reaches the burn-in steps
            online_state = tf.nest.map_structure(tf.stop_gradient, self.network.burn_in(observations[:burn], state, starts[:burn]))
            target_state = self.target_network.burn_in(observations[:burn], state, starts[:burn])
        learn = slice(burn, None)
        target_q = tf.stop_gradient(self.target_network.q_unroll(observations[learn], target_state, starts[learn]))
        q = self.network.q_unroll(observations[learn], online_state, starts[learn])
        losses = r2d2_loss(
            q=q,
            target_q=target_q,
            actions=inputs["action"][learn],
            rewards=clip_rewards(tf.cast(inputs["reward"][learn], tf.float32), c.reward_clipping),
            done=done[learn],
            phantom=phantom[learn],
            importance_weights=inputs["weights"],
            discount=c.discount,
            n_steps=c.n_steps,
            eps=c.value_rescale_eps,
            priority_eta=c.priority_eta,
        )
        metrics = {
            "losses/total": losses.total,
            "losses/td_abs": tf.reduce_mean(tf.abs(losses.td)),
            "learner/q_mean": tf.reduce_mean(q),
        }
        return losses.total, metrics, {"priorities": losses.priorities}

    def checkpoint_objects(self) -> dict[str, Any]:
        return {
            "network": self.network,
            "target_network": self.target_network,
            "optimizer": self.optimizer,
            "base_learning_rate": self.base_learning_rate,
        }
