"""GAE against a slow reference in the paper's notation, and its identities."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.algos import gae


def generalized_advantage_estimation(rewards, discounts, values, bootstrap, lambda_):
    """The paper's arguments (values and a bootstrap value) in rlax's form."""
    v_t = np.concatenate([np.asarray(values)[1:], np.asarray(bootstrap)[None]], axis=0)
    return gae.generalized_advantage_estimation(rewards, discounts, values, v_t, lambda_)

T, B = 7, 3


def ground_truth(rewards, discounts, values, bootstrap, lambda_):
    """A_t = sum_{l >= 0} (prod_{k < l} gamma_{t+k} lambda) delta_{t+l} (Schulman et al. 2016, eq. 16)."""
    v_tp1 = np.concatenate([values[1:], bootstrap[None]], 0)
    deltas = rewards + discounts * v_tp1 - values
    advantages = np.zeros_like(rewards)
    for t in range(len(rewards)):
        weight = np.ones(rewards.shape[1])
        for l in range(t, len(rewards)):
            advantages[t] += weight * deltas[l]
            weight = weight * discounts[l] * lambda_
    return advantages


@pytest.fixture
def inputs():
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(T, B)).astype(np.float32)
    discounts = (0.9 * (rng.random((T, B)) > 0.2)).astype(np.float32)  # some episodes terminate
    values = rng.normal(size=(T, B)).astype(np.float32)
    bootstrap = rng.normal(size=B).astype(np.float32)
    return rewards, discounts, values, bootstrap


@pytest.mark.parametrize("lambda_", [0.0, 0.5, 0.95, 1.0])
def test_matches_the_slow_reference(inputs, lambda_) -> None:
    result = generalized_advantage_estimation(*inputs, lambda_=lambda_)
    np.testing.assert_allclose(result.advantages, ground_truth(*inputs, lambda_), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(result.returns, result.advantages.numpy() + inputs[2], rtol=1e-6)


def test_lambda_zero_is_the_one_step_td_error(inputs) -> None:
    rewards, discounts, values, bootstrap = inputs
    v_tp1 = np.concatenate([values[1:], bootstrap[None]], 0)
    result = generalized_advantage_estimation(*inputs, lambda_=0.0)
    np.testing.assert_allclose(result.advantages, rewards + discounts * v_tp1 - values, rtol=1e-6)


def test_lambda_one_returns_are_discounted_returns_with_bootstrap(inputs) -> None:
    rewards, discounts, values, bootstrap = inputs
    expected = np.zeros_like(rewards)
    following = bootstrap
    for t in reversed(range(T)):
        following = rewards[t] + discounts[t] * following
        expected[t] = following
    np.testing.assert_allclose(generalized_advantage_estimation(*inputs, lambda_=1.0).returns, expected, rtol=1e-5)


def test_pinned_numbers() -> None:
    # One env, gamma 0.5, lambda 0.5: deltas are 1 + 0.5*2 - 1 = 1 and 0 + 0.5*4 - 2 = 0.
    result = generalized_advantage_estimation([[1.0], [0.0]], [[0.5], [0.5]], [[1.0], [2.0]], [4.0], lambda_=0.5)
    np.testing.assert_allclose(result.advantages, [[1.0], [0.0]])
    np.testing.assert_allclose(result.returns, [[2.0], [2.0]])
