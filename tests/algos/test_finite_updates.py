"""apply_finite_gradients: a non-finite loss or gradient leaves weights and optimizer state untouched."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from aioseed.algos.optimizer import apply_finite_gradients, make_optimizer


def test_a_non_finite_loss_or_gradient_is_skipped_and_a_finite_one_applied() -> None:
    weights = tf.Variable([1.0, 2.0])
    optimizer = make_optimizer("adam", 0.1, 40.0, [weights], epsilon=1e-7)

    @tf.function
    def step(scale: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(weights * scale)
        return apply_finite_gradients(optimizer, loss, tape.gradient(loss, [weights]), [weights])

    for scale in ([np.nan, 1.0], [np.inf, 1.0], [3e38, 3e38]):  # the last overflows the loss, not the gradient
        norm, skipped = step(tf.constant(scale, tf.float32))
        assert float(skipped) == 1.0, scale
        np.testing.assert_array_equal(weights.numpy(), [1.0, 2.0])
        assert int(optimizer.iterations.numpy()) == 0
    norm, skipped = step(tf.constant([1.0, 1.0]))
    assert float(skipped) == 0.0 and float(norm) == np.sqrt(2.0).astype(np.float32)
    assert int(optimizer.iterations.numpy()) == 1 and (weights.numpy() < [1.0, 2.0]).all()
