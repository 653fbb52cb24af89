"""An LSTM core between a network's torso and its heads, reset where episodes start.

Inference steps the core one row at a time with the state the learner keeps per
env slot. Training unrolls it over ``[T + 1, B]`` from the state stored with
each unroll, zeroing the state before every step that starts an episode, so it
replays exactly the states inference used.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from aioseed.algos.networks import PolicyValue, merge_time_batch, split_time_batch

STATE_NAMES = ("core_h", "core_c")


def unroll_lstm(
    cell: keras.layers.LSTMCell, features: tf.Tensor, state: dict[str, tf.Tensor], starts: tf.Tensor
) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
    """Runs ``cell`` over time.

    Args:
      cell: the LSTM cell.
      features: <float32>[T, B, F] torso outputs.
      state: ``core_h`` and ``core_c``, <float32>[B, units] each: the state before step 0.
      starts: <bool>[T, B] the state is zeroed before step t (an episode starts there).

    Returns:
      <float32>[T, B, units] the core's outputs, and the state after the last step.
    """
    keep = 1.0 - tf.cast(starts, tf.float32)[..., None]
    if not cell.built:
        cell.build(features.shape)
    # The inputs' share of every step's gates in one matmul over all T x B rows; the sequential scan keeps
    # only the recurrent matmul (the cell's fused implementation, its weights as they are).
    projected = tf.einsum("tbf,fg->tbg", tf.cast(features, cell.kernel.dtype), cell.kernel)
    if cell.use_bias:
        projected += cell.bias

    def step(carry: tuple[tf.Tensor, tf.Tensor], inputs: tuple[tf.Tensor, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor]:
        (h, c), (x, k) = carry, inputs
        gates = x + tf.matmul(h * k, cell.recurrent_kernel)
        i, f, g, o = tf.split(gates, 4, axis=-1)
        c = cell.recurrent_activation(f) * (c * k) + cell.recurrent_activation(i) * cell.activation(g)
        return cell.recurrent_activation(o) * cell.activation(c), c

    outputs, cells = tf.scan(step, (projected, keep), initializer=(state["core_h"], state["core_c"]))
    return outputs, {"core_h": outputs[-1], "core_c": cells[-1]}


class RecurrentPolicyValue(keras.Model):
    """``base``'s torso -> LSTM(units) -> ``base``'s heads, with the ``PolicyValue`` interface."""

    def __init__(self, base: PolicyValue, units: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.base = base
        self.units = units
        # Orthogonal init (the references' LSTM: gain 1 on both kernels); Keras's default otherwise.
        orthogonal = base.layer_options.init == "orthogonal"
        self.cell = keras.layers.LSTMCell(units, kernel_initializer="orthogonal") if orthogonal else keras.layers.LSTMCell(units)

    def state_shapes(self) -> dict[str, tuple[int, ...]]:
        return {name: (self.units,) for name in STATE_NAMES}

    def initial_state(self, batch_size: int) -> dict[str, tf.Tensor]:
        return {name: tf.zeros([batch_size, self.units]) for name in STATE_NAMES}

    def step(
        self, observations: tf.Tensor, state: dict[str, tf.Tensor], extras: tf.Tensor | None = None
    ) -> tuple[tf.Tensor, tf.Tensor, dict]:
        """One step; ``extras`` (<float32>[B, E]) join the torso's features as the core's input."""
        features = self._inputs(self.base.features(observations), extras)
        out, (h, c) = self.cell(features, [state["core_h"], state["core_c"]])
        logits, value = self.heads(out)
        return logits, value, {"core_h": h, "core_c": c}

    def unroll(
        self,
        observations: tf.Tensor,
        state: dict[str, tf.Tensor],
        starts: tf.Tensor,
        extras: tf.Tensor | None = None,
    ) -> tuple[tf.Tensor, tf.Tensor]:
        outputs, _ = self._core(observations, state, starts, extras)
        logits, values = self.heads(merge_time_batch(outputs))
        return split_time_batch(logits, observations), split_time_batch(values, observations)

    def burn_in(
        self,
        observations: tf.Tensor,
        state: dict[str, tf.Tensor],
        starts: tf.Tensor,
        extras: tf.Tensor | None = None,
    ) -> dict[str, tf.Tensor]:
        """The state after running the core over ``[T, B, ...]`` (T >= 1), e.g. R2D2's burn-in."""
        return self._core(observations, state, starts, extras)[1]

    def heads(self, outputs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        """<float32>[B, units] core outputs -> ``base``'s heads (logits [B, A], value [B])."""
        return self.base.heads(outputs)

    @staticmethod
    def _inputs(features: tf.Tensor, extras: tf.Tensor | None) -> tf.Tensor:
        return features if extras is None else tf.concat([features, extras], -1)

    def _core(
        self, observations: tf.Tensor, state: dict[str, tf.Tensor], starts: tf.Tensor, extras: tf.Tensor | None
    ) -> tuple[tf.Tensor, dict[str, tf.Tensor]]:
        features = split_time_batch(self.base.features(merge_time_batch(observations)), observations)
        return unroll_lstm(self.cell, self._inputs(features, extras), state, starts)

    def call(self, observations: tf.Tensor, state: dict[str, tf.Tensor]) -> tuple[tf.Tensor, tf.Tensor, dict]:
        return self.step(observations, state)
