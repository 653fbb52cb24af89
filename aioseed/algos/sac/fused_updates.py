"""What the replay-trained actor-critics (SAC, TD3) share: the Box and device checks, central inference with
evaluation rows, the critics' step, the train step, and the learning rates.

The train step: a train batch split into ``minibatches`` equal shares, each one update of the critics, and
after every ``policy_frequency``-th critic update the policy's updates on the same share (TD3's delayed
updates, CleanRL's rhythm), all in one compiled call.

The rhythm counts critic updates tried, applied or skipped, from the critic optimizer's count at the first
step, so a skipped update or a restart keeps it. The very first step always updates the policy, so that every
train step reports the policy's metrics (between its updates, the latest ones are repeated)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from aioseed.action_space import Box
from aioseed.algos.agent import SKIPPED, no_callback
from aioseed.algos.optimizer import apply_finite_gradients
from aioseed.algos.replicas import Replicas
from aioseed.algos.sac import loss
from aioseed.spec import EnvSpec
from aioseed.types import ENV_ACTION

COLUMNS = ("observation", "action", "reward", "done", "phantom")
"""The unroll columns a train step reads (time-major ``[T + 1, B, ...]``)."""
APPLIED = "fused/applied"
"""The fused call's count of updates that changed the critics or the policy (each is a new version)."""


class FusedUpdates:
    """Implements ``Agent.infer`` and ``Agent.train_step`` for an agent with ``_act_step``, ``_critic_update(share)``
    and ``_policy_update(share)`` (each update a dict of scalar tensors with ``SKIPPED``), ``config``
    (``minibatches``, ``policy_frequency``, ``jit_compile``, ``evaluation_action``, ``discount``) and its networks
    and optimizers."""

    uses_replay = True
    burn_in = 0
    policy_metric_names: tuple[str, ...] = ()
    """The policy update's metrics, kept from its latest update between the delayed ones."""
    also_skipped: tuple[str, ...] = ()
    """Policy-update metrics beyond ``SKIPPED`` that count the update as skipped without leaving the policy
    unchanged (SAC's temperature)."""
    config: Any
    network: Any
    """Its networks; ``network.critics`` are the twin Q networks (``aioseed.algos.sac.networks.TwinQ``)."""
    actor_optimizer: Any
    critic_optimizer: Any
    base_learning_rate: tf.Variable
    """The policy's rate as set (checkpointed); the other optimizers keep their configured ratio to it."""

    def state_columns(self) -> Mapping[str, Any]:
        return {}

    def infer(
        self,
        observations: np.ndarray,
        state: Mapping[str, np.ndarray],
        slots: np.ndarray | None = None,
        evaluation: np.ndarray | None = None,
        rewards: np.ndarray | None = None,
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """An exploring action per row from ``_act(observations, policy_rows)``; evaluation rows run the policy
        without exploration (SAC's mean, TD3's noiseless action) unless ``config.evaluation_action`` is sample.
        ``action`` is what is stored, ``env_action`` what the env runs."""
        policy_rows = np.zeros(len(observations), bool) if evaluation is None else np.asarray(evaluation, bool)
        if self.config.evaluation_action == "sample":
            policy_rows = np.zeros_like(policy_rows)
        with tf.device(self.replicas.inference_device()):
            action, env_action = self._act(observations, policy_rows)
        return {"action": action.numpy(), ENV_ACTION: env_action.numpy()}, {}

    def _take(self, name: str, spec: EnvSpec, config: Any, replicas: Replicas | None) -> Box:
        """Keeps ``spec``, ``config`` and ``replicas``; refuses anything but a Box action space trained on one
        device. Returns the box."""
        if not isinstance(spec.action_space, Box):
            raise ValueError(f"{name} acts in a Box action space; this env has {spec.action_space.describe()}: use --agent impala")
        self.spec, self.config, self.replicas = spec, config, replicas or Replicas()
        if self.replicas.count > 1:
            raise ValueError(f"{name} trains on one device; name one training device")
        return spec.action_space

    def _compile(self) -> None:
        """Call once the networks and optimizers exist: acting (``_act_step``) and the fused updates as graphs."""
        rows = tf.TensorSpec([None, *self.spec.observation_shape], tf.as_dtype(self.spec.observation_dtype))
        self._act = tf.function(self._act_step, input_signature=[rows, tf.TensorSpec([None], tf.bool)])
        self._train_fused = tf.function(self._fused_updates, jit_compile=self.config.jit_compile)
        self._policy_metrics: dict[str, float] = {}
        self._critic_steps: int | None = None
        self._rates_applied = False

    @property
    def policy_repeats(self) -> int:
        """Policy updates after a due critic update."""
        return 1

    def _act_step(self, observations: tf.Tensor, policy_rows: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """(stored action, env action) per row; ``policy_rows`` act without exploration."""
        raise NotImplementedError

    def _critic_update(self, share: dict[str, Any]) -> dict[str, tf.Tensor]:
        raise NotImplementedError

    def _policy_update(self, share: dict[str, Any]) -> dict[str, tf.Tensor]:
        raise NotImplementedError

    def _transitions(self, inputs: dict[str, Any]) -> loss.Transitions:
        return loss.transitions(
            inputs["observation"], inputs["action"], inputs["reward"], inputs["done"], inputs["phantom"], self.config.discount
        )

    def _fit_critics(self, data: loss.Transitions, actions: tf.Tensor, targets: tf.Tensor) -> tuple[dict[str, tf.Tensor], tf.Tensor]:
        """One step of the twin critics (``network.critics``) towards ``targets`` at (observation, ``actions``), skipped
        if non-finite: their metrics, and min(Q1, Q2) as they were before the step."""
        critics = self.network.critics
        with tf.GradientTape() as tape:
            q1, q2 = critics(data.observation, actions)
            critic_loss = loss.critic_loss(q1, q2, targets, data.valid)
        norm, skipped = apply_finite_gradients(
            self.critic_optimizer, critic_loss, tape.gradient(critic_loss, critics.trainable_variables), critics.trainable_variables
        )
        return {"losses/critic": critic_loss, "losses/grad_norm": norm, SKIPPED: skipped}, tf.minimum(q1, q2)

    def change_settings(self, config: Any) -> None:
        """Between train steps: the live field is the replay ratio, which the learner's replay and pacing read."""
        self.config = config

    def _optimizer_rates(self) -> list[tuple[Any, float]]:
        """Each optimizer with its configured rate (the policy's first)."""
        raise NotImplementedError

    def set_progress(self, frames: int) -> None:
        """The rates have no schedule; the first call applies the base rate (restored from a checkpoint)."""
        if not self._rates_applied:
            self._apply_learning_rate()

    def set_learning_rate(self, value: float) -> None:
        """Sets the policy's rate; the other optimizers' keep their configured ratio to it."""
        if not value > 0:
            raise ValueError(f"learning_rate must be positive, got {value}")
        self.base_learning_rate.assign(value)
        self._apply_learning_rate()

    def _apply_learning_rate(self) -> None:
        self._rates_applied = True
        scale = self.learning_rate / self.config.learning_rate
        rates = [(optimizer, rate * scale) for optimizer, rate in self._optimizer_rates()]
        for optimizer, rate in rates:
            optimizer.learning_rate = rate
        self._current_rate = rates[0][1]

    @property
    def learning_rate(self) -> float:
        return float(self.base_learning_rate.numpy())

    _current_rate: float | None = None

    @property
    def current_learning_rate(self) -> float:
        """The policy's rate in effect, kept as a float where it is set: the learner reads it on its event loop,
        where a read of the optimizer's variable waited on the train thread's call (~15% of the loop's busy time
        in a 1-env SAC run, by py-spy)."""
        if self._current_rate is None:  # before the first train step
            self._current_rate = float(keras.ops.convert_to_numpy(self.actor_optimizer.learning_rate))
        return self._current_rate

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = no_callback) -> dict[str, Any]:
        """``minibatches`` updates on equal shares of the batch's T x B transitions. Returns metrics (the
        critics' averaged, the policy's from its latest update) and ``priorities`` (ones: uniform replay)."""
        inputs = {name: batch[name] for name in COLUMNS}
        due = self._policy_due(self.config.minibatches)
        metrics, applied = self._updates(inputs, due)
        metrics["losses/total"] = metrics["losses/critic"] + metrics["losses/actor"]
        for _ in range(applied):  # each update that changed the policy that acts, or the critics that train it
            on_update()
        metrics["priorities"] = np.ones(batch["action"].shape[1], np.float32)
        return metrics

    def _updates(self, inputs: dict[str, np.ndarray], due: tuple[bool, ...]) -> tuple[dict[str, Any], int]:
        """The train step's updates in one compiled call: (metrics, updates applied)."""
        out = {name: float(value) for name, value in self._train_fused(inputs, due).items()}
        applied = int(out.pop(APPLIED))
        if any(due):
            self._policy_metrics = {name: out[name] for name in self.policy_metric_names}
        return {**{name: value for name, value in out.items() if name not in self.policy_metric_names}, **self._policy_metrics}, applied

    def _policy_due(self, updates: int) -> tuple[bool, ...]:
        """Which of the next ``updates`` critic updates the policy's updates follow (and the very first)."""
        if self._critic_steps is None:
            self._critic_steps = int(self.critic_optimizer.iterations.numpy())
        due = tuple((self._critic_steps + i) % self.config.policy_frequency == 0 for i in range(updates))
        self._critic_steps += updates
        return (True, *due[1:]) if not self._policy_metrics else due

    def _fused_updates(self, inputs: dict[str, tf.Tensor], due: tuple[bool, ...]) -> dict[str, tf.Tensor]:
        """Every update of a train step (``due``: static, so the graph is traced once per rhythm): the critics'
        metrics averaged, the latest policy update's, ``SKIPPED`` summed over the updates and ``APPLIED`` the
        updates that changed the critics or the policy."""
        rows, left = divmod(inputs["action"].shape[1], len(due))
        if left:
            raise ValueError(f"a batch of {inputs['action'].shape[1]} unrolls does not split into {len(due)} equal minibatches")
        critics, policy, skipped, applied = [], [], [], []
        for i, policy_due in enumerate(due):
            share = {name: column[:, i * rows : (i + 1) * rows] for name, column in inputs.items()}
            critic = self._critic_update(share)
            skip = critic.pop(SKIPPED)
            changed = 1.0 - skip
            for _ in range(self.policy_repeats if policy_due else 0):
                policy.append(self._policy_update(share))
                for name in (SKIPPED, *self.also_skipped):
                    skip = tf.maximum(skip, policy[-1][name])
                changed = tf.maximum(changed, 1.0 - policy[-1][SKIPPED])
            critics.append(critic)
            skipped.append(skip)
            applied.append(changed)
        out = {name: tf.reduce_mean(tf.stack([critic[name] for critic in critics])) for name in critics[0]}
        if policy:
            out.update({name: policy[-1][name] for name in self.policy_metric_names})
        return {**out, SKIPPED: tf.add_n(skipped), APPLIED: tf.add_n(applied)}
