"""The tanh-squashed Gaussian's density: a true density on the box, the change of variables right, and
finite values and gradients where tanh saturates."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos import tanh_gaussian as tg


@pytest.mark.parametrize(("mean", "log_std", "low", "high"), [(0.0, 0.0, -1.0, 1.0), (1.5, -0.7, -2.0, 0.5), (-0.3, 0.8, 0.0, 10.0)])
def test_the_squashed_density_integrates_to_one_over_the_box(mean, log_std, low, high) -> None:
    # The density is integrated over the actions a = squash(u) of a fine grid of u: dense where it is sharp,
    # near the edges (float64 resolves tanh up to |u| ~ 18).
    u = np.linspace(-16.0, 16.0, 400_001)[:, None]
    column = lambda x: tf.constant(np.full_like(u, x), tf.float64)  # noqa: E731
    a = tg.squash(tf.constant(u), column(low), column(high)).numpy()[:, 0]
    density = np.exp(tg.log_prob(tf.constant(u), column(mean), column(log_std), column(low), column(high)).numpy())
    assert np.trapezoid(density, a) == pytest.approx(1.0, abs=1e-3)


def test_the_stable_jacobian_equals_the_direct_formula_where_tanh_is_not_saturated() -> None:
    u = tf.constant(np.linspace(-4.0, 4.0, 81)[:, None], tf.float64)
    low, high = tf.constant([-2.0], tf.float64), tf.constant([3.0], tf.float64)
    direct = np.log(1.0 - np.tanh(u.numpy()[:, 0]) ** 2) + np.log(2.5)
    np.testing.assert_allclose(tg.log_det_jacobian(u, low, high).numpy(), direct, rtol=1e-9, atol=1e-9)


def test_log_prob_and_its_gradient_stay_finite_where_tanh_rounds_to_the_edges() -> None:
    u = tf.constant([[-60.0, 0.0, 60.0]])
    mean = tf.Variable([[0.5, -0.5, 1.0]])
    log_std = tf.Variable([[-1.0, 0.0, 1.0]])
    low, high = tf.constant([-1.0, -1.0, -1.0]), tf.constant([1.0, 1.0, 1.0])
    with tf.GradientTape() as tape:
        value = tg.log_prob(u, mean, log_std, low, high)
    gradients = tape.gradient(value, [mean, log_std])
    assert np.isfinite(value.numpy()).all()
    assert all(np.isfinite(g.numpy()).all() for g in gradients)
    action = tg.squash(u, low, high).numpy()
    assert (action >= -1.0).all() and (action <= 1.0).all()  # float32 tanh(60) is exactly 1: the edge, not past it


def test_samples_follow_the_gaussian_and_its_entropy_is_the_mean_negative_log_density() -> None:
    mean = tf.constant(np.tile([[0.3, -1.2]], (200_000, 1)), tf.float32)
    log_std = tf.constant(np.tile([[-0.5, 0.4]], (200_000, 1)), tf.float32)
    u = tg.sample(mean, log_std, seed=tf.constant([1, 2]))
    np.testing.assert_allclose(u.numpy().mean(0), [0.3, -1.2], atol=0.01)
    np.testing.assert_allclose(u.numpy().std(0), np.exp([-0.5, 0.4]), rtol=0.01)
    monte_carlo = -tf.reduce_mean(tg.gaussian_log_prob(u, mean, log_std)).numpy()
    assert tg.gaussian_entropy(log_std[:1]).numpy()[0] == pytest.approx(monte_carlo, abs=0.01)
    np.testing.assert_array_equal(u.numpy(), tg.sample(mean, log_std, seed=tf.constant([1, 2])).numpy())  # stateless
