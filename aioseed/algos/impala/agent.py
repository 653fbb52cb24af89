"""The V-trace agent: network, batched inference and the compiled train step (one pass, or PPO-style reuse)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import tensorflow as tf

from aioseed.algos.agent import SKIPPED, no_callback
from aioseed.algos.extras import PREVIOUS_ACTION, unroll_extras
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.loss import (
    Diagnostics,
    ImpalaLosses,
    SurrogateLosses,
    clipped_surrogate_loss,
    diagnostics,
    impala_loss,
    normalize,
    targets,
)
from aioseed.algos.impala.policy import VALUE, ImpalaPolicy
from aioseed.algos.normalization import RewardScaler, RunningNormalizer
from aioseed.algos.optimizer import LearningRateControl, make_optimizer, minimize
from aioseed.algos.replicas import Replicas, replica_sum
from aioseed.algos.rewards import clip_rewards
from aioseed.algos.schedule import schedule_factor
from aioseed.spec import EnvSpec

ENTROPY_COST = "losses/entropy_cost"
"""The metric of the entropy cost in effect (``ImpalaConfig.entropy_schedule``)."""

COLUMNS = ("observation", "action", "logits", "reward", "done", "phantom")
"""The unroll columns a train step reads (time-major ``[T + 1, B, ...]``), besides the state columns."""


def diagnostic_metrics(drift: Diagnostics) -> dict[str, tf.Tensor]:
    """``Diagnostics`` under their metric names."""
    return {
        "policy/kl_behaviour": drift.kl_behaviour,
        "policy/rho_clipped_mean": drift.rho_clipped_mean,
        "policy/rho_below_half": drift.rho_below_half,
        "policy/explained_variance": drift.explained_variance,
        "policy/entropy": drift.entropy,
    }


def clip_bound(ppo_clip: float | None) -> float:
    """PPO's clip as the compiled loss reads it (inf: not clipped)."""
    return math.inf if ppo_clip is None else ppo_clip


class ImpalaAgent(ImpalaPolicy, LearningRateControl):
    """V-trace actor-critic, feedforward or with an LSTM core. Implements ``aioseed.algos.agent.Agent``.

    One pass (the default) is IMPALA: one update per batch, the loss and its V-trace
    targets from the same forward pass. With sample reuse (``ImpalaConfig.reuses_samples``)
    the targets are computed once per batch by the network as it is then (the proximal
    policy), or from the behaviour's stored logits and values (``ImpalaConfig.proximal``),
    followed by ``epochs`` x ``minibatches`` updates on shuffled groups of unrolls, or of single
    transitions (``ImpalaConfig.minibatch``, feedforward networks).
    Each update is data-parallel over ``replicas``' training devices (``aioseed.algos.replicas``).
    """

    uses_replay = False
    """Trains once on each unroll, in arrival order, from the bounded queue."""

    def __init__(
        self,
        spec: EnvSpec,
        config: ImpalaConfig,
        replicas: Replicas | None = None,
        seed: int | None = None,
        precision: str = "float32",
    ) -> None:
        """``precision``: the torso's (``aioseed.algos.networks.Layers``): float32 or bfloat16."""
        self.replicas = replicas or Replicas()
        if config.jit_compile and self.replicas.count > 1:
            raise ValueError("impala.jit_compile trains on one device only; drop it or name one training device")
        self._rng = np.random.default_rng(seed)
        with self.replicas.scope():
            ImpalaPolicy.__init__(self, spec, config, self.replicas.inference_device, precision)
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
            self.init_learning_rate(config.learning_rate, config.lr_schedule, config.lr_frames, config.lr_final_fraction, config.target_kl)
            # A variable, so that the compiled losses read its scheduled value without retracing.
            self.entropy_cost = tf.Variable(config.entropy_cost, trainable=False, dtype=tf.float32, name="entropy_cost")
            # Variables too, so that a change between train steps (``change_settings``) needs no retrace.
            self.clip_epsilon = tf.Variable(clip_bound(config.ppo_clip), trainable=False, dtype=tf.float32, name="clip_epsilon")
        self._frames = 0
        """Training progress at the last ``set_progress`` (a change of the schedules re-applies them from it)."""
        base = getattr(self.network, "base", self.network)  # an LSTM core wraps the torso
        self._normalizer: RunningNormalizer | None = getattr(base, "normalizer", None)
        self._reward_scaler = RewardScaler(config.discount, config.scaled_reward_clip) if config.scale_rewards else None
        self._state_axes = {name: 0 for name in self.policy.state_names}
        self._behaviour_columns = (VALUE,) if config.proximal == "behaviour" else ()
        compile_options = {"jit_compile": config.jit_compile, "reduce_retracing": True}
        self._train = tf.function(self.update, **compile_options)
        self._targets = tf.function(self._compute_targets, **compile_options)
        self._update = tf.function(self._update_step, **compile_options)
        self._update_transitions = tf.function(self._transitions_step, **compile_options)

    def set_progress(self, frames: int) -> None:
        """Moves the learning rate's and the entropy cost's schedules to ``frames`` of training."""
        self._frames = frames
        LearningRateControl.set_progress(self, frames)
        c = self.config
        fraction = frames / c.entropy_frames if c.entropy_frames > 0 else 0.0
        self.entropy_cost.assign(c.entropy_cost * schedule_factor(c.entropy_schedule, fraction, c.entropy_final_fraction))

    def change_settings(self, config: ImpalaConfig) -> None:
        """Between train steps: ``config``'s live fields (``aioseed.algos.impala.builder.LIVE``) apply from the next
        step: the entropy cost, PPO's clip, epochs and minibatches, and the schedules' end points."""
        self.config = config
        self.schedule_frames, self.final_fraction = config.lr_frames, config.lr_final_fraction
        self.clip_epsilon.assign(clip_bound(config.ppo_clip))
        self.set_progress(self._frames)

    def _clip(self, rewards: np.ndarray | tf.Tensor) -> tf.Tensor:
        return clip_rewards(tf.cast(rewards, tf.float32), self.config.reward_clipping, self.config.reward_clip)

    def train_step(self, batch: Mapping[str, np.ndarray], on_update: Callable[[], None] = no_callback) -> dict[str, float]:
        """One pass: one update. Sample reuse: ``epochs`` x ``minibatches`` updates (metrics averaged;
        ``SKIPPED`` counts the updates not applied). ``on_update`` is called after each applied update."""
        columns = {name: batch[name] for name in (*COLUMNS, *self._behaviour_columns, *self.policy.state_names)}
        if self._reward_scaler is not None:
            columns["reward"] = self._reward_scaler.scale(columns["reward"], columns["done"], batch["slot"])
        metrics = self._train_columns(columns, on_update)
        if self._normalizer is not None:
            # After the updates, which so normalise the batch's observations as its acting did (in synchronous
            # mode exactly: the statistics move only here). Steps 1..T: step 0 repeats the previous unroll's last.
            observations = columns["observation"][1:]
            self._normalizer.update(observations.reshape(-1, math.prod(observations.shape[2:])))
        return metrics

    def _train_columns(self, columns: dict[str, np.ndarray], on_update: Callable[[], None]) -> dict[str, float]:
        if not self.config.reuses_samples:
            metrics = {name: float(value) for name, value in self._train(self._split(columns)).items()}
            if not metrics[SKIPPED]:
                on_update()
            return {**metrics, ENTROPY_COST: float(self.entropy_cost.numpy())}
        rows, proximal_metrics = self._targets(self._split(columns))
        proximal = {name: value.numpy() for name, value in rows.items()}
        if self.config.minibatch == "transitions":
            steps = {name: columns[name][:-1] for name in ("observation", "action")}
            step = self._update_transitions
            # [T, B, ...] -> [1, T * B, ...]: one "time step" of T * B rows, split along the batch axis as unrolls are.
            data = {name: column.reshape(1, -1, *column.shape[2:]) for name, column in {**steps, **proximal}.items()}
        else:
            step, data = self._update, {**columns, **proximal}
        self._trace_for_any_minibatch(step, data)
        totals: dict[str, float] = {}
        updates = 0
        for _ in range(self.config.epochs):
            order = self._rng.permutation(data["action"].shape[1])
            # A batch of fewer unrolls than minibatches (one side's share, SidedAgent) makes fewer, not empty, ones.
            for part in np.array_split(order, min(self.config.minibatches, len(order))):
                updates += 1
                minibatch = {name: column[part] if name in self._state_axes else column[:, part] for name, column in data.items()}
                result = {name: float(value) for name, value in step(self._split(minibatch)).items()}
                if not result[SKIPPED]:
                    self.adapt_to_kl(result["losses/approx_kl"])
                    on_update()
                for name, value in result.items():
                    totals[name] = totals.get(name, 0.0) + value
        skipped = totals.pop(SKIPPED)
        means = {name: value / updates for name, value in totals.items()}
        proximal_means = {name: float(value) for name, value in proximal_metrics.items()}
        return {**means, **proximal_means, ENTROPY_COST: float(self.entropy_cost.numpy()), SKIPPED: skipped}

    def _trace_for_any_minibatch(self, step: Any, data: Mapping[str, np.ndarray]) -> None:
        """Traces ``step`` once, before its first call, for minibatches of any size: a new ``minibatches`` (a live
        change, or a side's smaller share) then needs no retrace. One training replica only: several take
        distributed values, traced as they come."""
        compiled = isinstance(step, tf.types.experimental.PolymorphicFunction)  # not a test's plain function
        if self.replicas.count != 1 or not compiled or step.experimental_get_tracing_count():
            return
        specs = {}
        for name, column in data.items():
            shape = list(column.shape)
            shape[self._state_axes.get(name, 1)] = None
            specs[name] = tf.TensorSpec(shape, tf.as_dtype(column.dtype))
        step.get_concrete_function(specs)

    def _split(self, columns: Mapping[str, np.ndarray]) -> dict[str, Any]:
        """Each training replica's share: time-major columns along axis 1, state columns along axis 0."""
        return self.replicas.split(columns, self._state_axes)

    def checkpoint_objects(self) -> dict[str, Any]:
        objects = {"network": self.network, "optimizer": self.optimizer, **self.learning_rate_objects()}
        if self._reward_scaler is not None:
            objects["reward_scaler"] = self._reward_scaler
        return objects

    def _unroll(self, inputs: Mapping[str, tf.Tensor], rewards: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """Logits and values of ``[T + 1, B]`` unrolls, replaying inference's inputs and state resets
        (``rewards``: the clipped ones)."""
        # An episode starts at a done row that is not an episode's final observation (as at inference).
        starts = inputs["done"] & ~inputs["phantom"]
        core = {name: inputs[name] for name in self.network.state_shapes()}
        extras = None
        if self.config.previous_action_reward:
            extras = unroll_extras(inputs[PREVIOUS_ACTION], inputs["action"], rewards, starts, self.distribution.features)
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
            entropy_cost=self.entropy_cost,
            clip_rho_threshold=c.clip_rho_threshold,
            clip_pg_rho_threshold=c.clip_pg_rho_threshold,
            lambda_=c.lambda_,
            normalize_advantages=c.normalize_advantages,
            cross_replica_sum=replica_sum,
            distribution=self.distribution,
        )
        return losses.total, {**self._loss_metrics(losses), **diagnostic_metrics(losses.diagnostics)}, {}

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

    def _compute_targets(self, inputs: dict[str, Any]) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        """The proximal policy's columns of the T transitions (``[T, B]``: log_probs, advantages, value_targets,
        valid; computed on every replica's share and concatenated), and its ``diagnostic_metrics``."""
        rows, metrics = self.replicas.run(self._replica_targets, inputs)
        return self.replicas.concat(rows, axis=1), self.replicas.mean(metrics)

    def _replica_targets(self, inputs: dict[str, tf.Tensor]) -> tuple[dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        c = self.config
        rewards = self._clip(inputs["reward"])
        if c.proximal == "behaviour":  # what inference gave as the batch was acted: no pass over it
            logits, values = inputs["logits"], inputs[VALUE]
        else:
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
            distribution=self.distribution,
        )
        log_probs = self.distribution.log_prob(logits[:-1], actions[:-1])
        drift = diagnostics(
            logits[:-1],
            values[:-1],
            inputs["logits"][:-1],
            actions[:-1],
            result.value_targets,
            result.valid,
            replica_sum,
            self.distribution,
        )
        rows = {
            "log_probs": log_probs,
            "advantages": result.advantages,
            "value_targets": result.value_targets,
            "valid": result.valid,
        }
        return rows, diagnostic_metrics(drift)

    def _update_step(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        """One update of the clipped surrogate on a minibatch of unrolls and their proximal targets."""
        return minimize(self.replicas, self.optimizer, self._surrogate_loss, self.network.trainable_variables, inputs)

    def _surrogate_loss(self, inputs: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        """A minibatch of ``[T + 1, b]`` unrolls with their proximal ``[T, b]`` columns."""
        logits, values = self._unroll(inputs, self._clip(inputs["reward"]))
        return self._clipped_surrogate(inputs, logits[:-1], values[:-1], inputs["action"][:-1])

    def _transitions_step(self, inputs: dict[str, Any]) -> dict[str, tf.Tensor]:
        """One update of the clipped surrogate on a minibatch of single transitions (``[1, b]``)."""
        return minimize(self.replicas, self.optimizer, self._transitions_loss, self.network.trainable_variables, inputs)

    def _transitions_loss(self, inputs: dict[str, tf.Tensor]) -> tuple[tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        logits, values, _ = self.network.step(inputs["observation"][0], {})
        return self._clipped_surrogate(inputs, logits[None], values[None], inputs["action"])

    def _clipped_surrogate(
        self, inputs: dict[str, tf.Tensor], logits: tf.Tensor, values: tf.Tensor, actions: tf.Tensor
    ) -> tuple[tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        """The loss of ``[T, b]`` steps' current ``logits`` and ``values`` against their proximal columns."""
        c = self.config
        valid = inputs["valid"]
        advantages = inputs["advantages"]
        if c.normalize_advantages:  # over the whole minibatch, all replicas' shares together
            advantages = normalize(advantages, valid, cross_replica_sum=replica_sum)
        losses = clipped_surrogate_loss(
            logits=logits,
            values=values,
            proximal_log_probs=inputs["log_probs"],
            actions=actions,
            advantages=advantages,
            value_targets=inputs["value_targets"],
            valid=valid,
            clip_epsilon=self.clip_epsilon,
            baseline_cost=c.baseline_cost,
            entropy_cost=self.entropy_cost,
            distribution=self.distribution,
        )
        return losses.total, self._loss_metrics(losses), {}
