"""The policy-gradient distributions: the categoricals add up, the tanh-Gaussian is a density on its box."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from aioseed.algos import tanh_gaussian
from aioseed.action_space import LOG_STD_MAX, LOG_STD_MIN
from aioseed.algos.distributions import Categorical, MultiCategorical, TanhGaussian, gaussian_params


def test_independent_categoricals_add_their_log_probs_entropies_and_kls() -> None:
    rng = np.random.default_rng(0)
    nvec = (3, 2, 4)
    dist = MultiCategorical(nvec)
    p, q = (tf.constant(rng.normal(size=(5, sum(nvec))), tf.float32) for _ in range(2))
    actions = tf.constant(np.stack([rng.integers(0, n, 5) for n in nvec], -1), tf.int32)
    parts = np.cumsum((0, *nvec))
    single = Categorical()
    expected_log_prob = sum(single.log_prob(p[:, a:b], actions[:, i]) for i, (a, b) in enumerate(zip(parts, parts[1:])))
    np.testing.assert_allclose(dist.log_prob(p, actions), expected_log_prob, rtol=1e-6)
    np.testing.assert_allclose(dist.entropy(p), sum(single.entropy(p[:, a:b]) for a, b in zip(parts, parts[1:])), rtol=1e-6)
    np.testing.assert_allclose(dist.kl(p, q), sum(single.kl(p[:, a:b], q[:, a:b]) for a, b in zip(parts, parts[1:])), rtol=1e-5)
    sample = dist.sample(p).numpy()
    assert sample.shape == (5, 3) and (sample >= 0).all() and (sample < np.array(nvec)).all()
    assert dist.features(actions).shape == (5, 9)
    np.testing.assert_array_equal(tf.reduce_sum(dist.features(actions), -1), [3] * 5)


BOX = TanhGaussian(2, (-1.0, 0.0), (1.0, 4.0))


def test_the_squashed_density_integrates_to_one_over_its_box() -> None:
    """On a grid of u, sum pi(a) |da/du| du = 1 is the Gaussian; here the density of a itself, summed over a
    grid of a, must also be 1: the tanh correction is right."""
    dist = TanhGaussian(1, (-2.0,), (2.0,))
    params = tf.constant([[0.7, np.log(0.8)]], tf.float32)
    a = np.linspace(-2.0, 2.0, 200_001)[1:-1]
    u = np.arctanh(a / 2.0).astype(np.float32)[:, None]
    density = np.exp(dist.log_prob(tf.repeat(params, len(u), 0), tf.constant(u)).numpy())
    assert abs(float(np.sum(density) * (a[1] - a[0])) - 1.0) < 1e-3


def test_log_probs_stay_finite_at_the_edges_of_the_box_and_the_ratio_is_the_gaussians() -> None:
    p = tf.constant([[0.0, 0.5, -1.0, 0.0]] * 3, tf.float32)
    q = tf.constant([[0.3, -0.2, -1.5, 0.4]] * 3, tf.float32)
    u = tf.constant([[30.0, -40.0], [9.5, 9.5], [0.0, 0.1]], tf.float32)
    assert np.isfinite(BOX.log_prob(p, u).numpy()).all()
    assert np.isfinite(tanh_gaussian.log_det_jacobian(u, -1.0, 1.0).numpy()).all()
    gaussian = tanh_gaussian.gaussian_log_prob(u, *BOX.mean_log_std(p)) - tanh_gaussian.gaussian_log_prob(u, *BOX.mean_log_std(q))
    np.testing.assert_allclose(BOX.log_prob(p, u) - BOX.log_prob(q, u), gaussian, rtol=1e-5)
    actions = BOX.env_action(u).numpy()
    assert (actions >= [-1.0, 0.0]).all() and (actions <= [1.0, 4.0]).all()


def test_the_gaussian_kl_matches_a_monte_carlo_estimate_and_is_zero_to_itself() -> None:
    p = tf.constant([[0.2, -0.4, 0.1, -0.3]], tf.float32)
    q = tf.constant([[0.5, 0.0, -0.2, 0.2]], tf.float32)
    np.testing.assert_allclose(BOX.kl(p, p), [0.0], atol=1e-7)
    u = BOX.sample(tf.repeat(p, 400_000, 0))
    estimate = tf.reduce_mean(BOX.log_prob(tf.repeat(p, 400_000, 0), u) - BOX.log_prob(tf.repeat(q, 400_000, 0), u))
    np.testing.assert_allclose(BOX.kl(p, q)[0], estimate, rtol=0.02)
    np.testing.assert_allclose(BOX.entropy(p), [2 * (0.5 + 0.5 * np.log(2 * np.pi)) + 0.1 - 0.3], rtol=1e-6)
    np.testing.assert_array_equal(BOX.mode(p), p[:, :2])


def test_head_parameters_clip_the_log_std() -> None:
    params = gaussian_params(tf.constant([[1.0, 2.0]]), tf.constant([[-50.0, 50.0]]))
    np.testing.assert_array_equal(params, [[1.0, 2.0, LOG_STD_MIN, LOG_STD_MAX]])
