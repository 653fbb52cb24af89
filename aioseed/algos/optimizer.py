"""Optimizers the agents train with, learning-rate schedules, and the learning-rate control the console uses."""

from __future__ import annotations

import math
from typing import Any

import keras
import tensorflow as tf

from aioseed.algos.agent import SKIPPED
from aioseed.algos.replicas import ReplicaLoss, Replicas
from aioseed.algos.schedule import OptimizerKind, ScheduleKind, kl_adapted_rate, schedule_factor


def adam(learning_rate: float, epsilon: float, max_grad_norm: float | None, variables: list) -> keras.optimizers.Adam:
    """Adam with global-norm gradient clipping, built for ``variables`` (so checkpoints restore into it)."""
    return make_optimizer("adam", learning_rate, max_grad_norm, variables, epsilon=epsilon)


def make_optimizer(
    kind: OptimizerKind,
    learning_rate: float,
    max_grad_norm: float | None,
    variables: list,
    *,
    epsilon: float,
    beta_1: float = 0.9,
    beta_2: float = 0.999,
    rho: float = 0.99,
    momentum: float = 0.0,
) -> keras.optimizers.Optimizer:
    """Adam (``beta_1``, ``beta_2``) or RMSProp (decay ``rho``, ``momentum``), built for ``variables``."""
    if kind == "adam":
        optimizer: keras.optimizers.Optimizer = keras.optimizers.Adam(
            learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, global_clipnorm=max_grad_norm
        )
    elif kind == "rmsprop":
        optimizer = keras.optimizers.RMSprop(
            learning_rate=learning_rate, rho=rho, momentum=momentum, epsilon=epsilon, global_clipnorm=max_grad_norm
        )
    else:
        raise ValueError(f"unknown optimizer {kind!r}; known: adam, rmsprop")
    optimizer.build(variables)
    return optimizer


def apply_finite_gradients(
    optimizer: keras.optimizers.Optimizer, loss: tf.Tensor, gradients: list[tf.Tensor], variables: list[tf.Variable]
) -> tuple[tf.Tensor, tf.Tensor]:
    """Applies ``gradients`` only when ``loss`` and all gradients are finite (inside a ``tf.function``).

    A skipped update leaves the weights and the optimizer's state (moments, step count) untouched, so
    one batch with an overflowing loss cannot make the weights NaN.
    Returns <float32>[] the gradients' global norm (before clipping) and <float32>[] 1 if skipped, else 0.
    """
    norm = tf.linalg.global_norm(gradients)
    finite = tf.math.is_finite(loss) & tf.math.is_finite(norm)  # the norm is non-finite if any element is

    def apply() -> tf.Tensor:
        optimizer.apply_gradients(zip(gradients, variables))
        return tf.constant(0.0)

    skipped = tf.cond(finite, apply, lambda: tf.constant(1.0))
    return norm, skipped


def minimize(
    replicas: Replicas,
    optimizer: keras.optimizers.Optimizer,
    loss_fn: ReplicaLoss,
    variables: list[tf.Variable],
    inputs: dict[str, Any],
) -> dict[str, tf.Tensor]:
    """Every train step's tail, inside a ``tf.function``: ``loss_fn`` on each replica's share of
    ``inputs`` (``Replicas.split``), the gradients of the whole batch's loss summed by the strategy,
    clipped by the optimizer's global norm and applied once, only if finite.

    Returns ``loss_fn``'s metrics averaged over the replicas, its per-row outputs concatenated back
    in batch order, ``losses/grad_norm`` and ``SKIPPED`` (1 if the update was not applied).
    """
    share = 1.0 / replicas.count

    def replica(inputs: dict[str, Any]) -> tuple[list[tf.Tensor], tf.Tensor, dict[str, tf.Tensor], dict[str, tf.Tensor]]:
        with tf.GradientTape() as tape:
            loss, metrics, rows = loss_fn(inputs)
            scaled = loss * share  # losses are means over equal shares: the sum over replicas is the batch's
        return tape.gradient(scaled, variables), loss, metrics, rows

    gradients, loss, metrics, rows = replicas.run(replica, inputs)
    # Clipping and the finite check see the whole batch's gradient, as on one device.
    norm, skipped = apply_finite_gradients(optimizer, replicas.mean(loss), replicas.total(gradients), variables)
    return {**replicas.mean(metrics), **replicas.concat(rows), "losses/grad_norm": norm, SKIPPED: skipped}


class LearningRateControl:
    """The learning rate of ``self.optimizer``: a base rate times a schedule over a frame budget.

    The console sets the base rate (``set_learning_rate``); the schedule scales it by
    the training progress (``set_progress``), so a rate set mid-run decays from there
    on along the same curve. Both apply between train steps. The base rate lives in a
    variable saved with checkpoints (``checkpoint_objects``). With a ``target_kl``, a
    third factor follows each update's approximate KL (``adapt_to_kl``, between updates);
    it lives in ``kl_factor``, saved with checkpoints too.
    """

    optimizer: keras.optimizers.Optimizer
    schedule: ScheduleKind = "constant"
    schedule_frames: int = 0
    final_fraction: float = 0.0
    target_kl: float | None = None
    base_learning_rate: tf.Variable
    kl_factor: tf.Variable
    _fraction: float = 0.0
    _current_rate: float = math.nan

    def init_learning_rate(
        self, base: float, schedule: ScheduleKind = "constant", frames: int = 0, final_fraction: float = 0.0, target_kl: float | None = None
    ) -> None:
        """Call once ``self.optimizer`` exists; checkpoint ``self.base_learning_rate`` (and, with a
        ``target_kl``, ``self.kl_factor``) with it."""
        self.base_learning_rate = tf.Variable(base, trainable=False, dtype=tf.float32, name="base_learning_rate")
        self.kl_factor = tf.Variable(1.0, trainable=False, dtype=tf.float32, name="kl_factor")
        self.schedule, self.schedule_frames, self.final_fraction = schedule, frames, final_fraction
        self.target_kl = target_kl
        self._apply_learning_rate()

    def learning_rate_objects(self) -> dict[str, tf.Variable]:
        """The learning rate's state for ``checkpoint_objects``."""
        objects = {"base_learning_rate": self.base_learning_rate}
        if self.target_kl is not None:
            objects["kl_factor"] = self.kl_factor
        return objects

    def adapt_to_kl(self, kl: float) -> None:
        """With a ``target_kl``: moves the rate in effect by ``kl_adapted_rate`` after an update whose
        approximate KL was ``kl`` (the base rate and the schedule stay; the factor on them moves)."""
        if self.target_kl is None:
            return
        scheduled = self.learning_rate * schedule_factor(self.schedule, self._fraction, self.final_fraction)
        if scheduled <= 0:
            return
        adapted = kl_adapted_rate(scheduled * float(self.kl_factor.numpy()), kl, self.target_kl)
        self.kl_factor.assign(adapted / scheduled)
        self._apply_learning_rate()

    @property
    def learning_rate(self) -> float:
        """The base rate (what the console sets); ``current_learning_rate`` is the one in effect."""
        return float(self.base_learning_rate.numpy())

    @property
    def current_learning_rate(self) -> float:
        """The rate in effect, kept as a float where it is set (the learner reads it on its event loop, where a
        read of the optimizer's variable could wait on the train thread)."""
        return self._current_rate

    def set_learning_rate(self, value: float) -> None:
        if not value > 0:
            raise ValueError(f"learning_rate must be positive, got {value}")
        self.base_learning_rate.assign(value)
        self._apply_learning_rate()

    def set_progress(self, frames: int) -> None:
        """Moves the schedule to ``frames`` of training (no-op for a constant rate)."""
        if self.schedule != "constant" and self.schedule_frames > 0:
            self._fraction = frames / self.schedule_frames
        self._apply_learning_rate()

    def _apply_learning_rate(self) -> None:
        factor = schedule_factor(self.schedule, self._fraction, self.final_fraction) * float(self.kl_factor.numpy())
        self._current_rate = self.learning_rate * factor
        self.optimizer.learning_rate = self._current_rate  # assigns the optimizer's variable
