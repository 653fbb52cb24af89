"""V-trace against a slow reference in the paper's notation and pinned numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from aioseed.algos import vtrace


def _vtrace(log_rhos, discounts, rewards, values, bootstrap_value, **kwargs) -> vtrace.VTraceReturns:
    """The paper's arguments (values and a bootstrap value) in rlax's form."""
    v_t = np.concatenate([np.asarray(values)[1:], np.asarray(bootstrap_value)[None]], axis=0)
    return vtrace.from_importance_weights(values, v_t, rewards, discounts, log_rhos, **kwargs)


def _ground_truth(log_rhos, discounts, rewards, values, bootstrap_value, clip_rho, clip_pg_rho, lambda_):
    """Eq. 1 of Espeholt et al. 2018, written out term by term.

    v_s = V(x_s) + sum_{t=s}^{T-1} (prod_{i=s}^{t-1} gamma_i c_i) delta_t V, where
    delta_t V = rho_t (r_t + gamma_t V(x_{t+1}) - V(x_t)), rho_t = min(rho-bar, pi/mu),
    c_i = lambda min(1, pi/mu) and V(x_T) is the bootstrap value.
    """
    T, B = log_rhos.shape
    ratio = np.exp(log_rhos)
    rho = ratio if clip_rho is None else np.minimum(clip_rho, ratio)
    c = lambda_ * np.minimum(1.0, ratio)
    V = np.concatenate([values, bootstrap_value[None]], axis=0)  # V[T] = V(x_T)
    vs = np.zeros((T, B))
    for b in range(B):
        for s in range(T):
            total = V[s, b]
            for t in range(s, T):
                weight = 1.0
                for i in range(s, t):
                    weight *= discounts[i, b] * c[i, b]
                delta = rho[t, b] * (rewards[t, b] + discounts[t, b] * V[t + 1, b] - V[t, b])
                total += weight * delta
            vs[s, b] = total
    vs_next = np.concatenate([vs[1:], bootstrap_value[None]], axis=0)
    rho_pg = ratio if clip_pg_rho is None else np.minimum(clip_pg_rho, ratio)
    pg_advantages = rho_pg * (rewards + discounts * vs_next - values)
    return vs, pg_advantages


def _random_inputs(rng: np.random.Generator, T: int, B: int) -> dict[str, np.ndarray]:
    discounts = rng.uniform(0.8, 1.0, size=(T, B)).astype(np.float32)
    discounts[rng.random((T, B)) < 0.2] = 0.0  # episode ends inside the unroll
    return dict(
        log_rhos=rng.normal(0.0, 1.0, size=(T, B)).astype(np.float32),
        discounts=discounts,
        rewards=rng.normal(size=(T, B)).astype(np.float32),
        values=rng.normal(size=(T, B)).astype(np.float32),
        bootstrap_value=rng.normal(size=(B,)).astype(np.float32),
    )


@pytest.mark.parametrize("T,B", [(1, 1), (5, 3), (20, 8)])
@pytest.mark.parametrize(
    "clip_rho,clip_pg_rho,lambda_",
    [(1.0, 1.0, 1.0), (None, None, 1.0), (2.0, 0.5, 0.7), (1.0, 1.0, 0.0)],
)
def test_matches_reference(T: int, B: int, clip_rho, clip_pg_rho, lambda_) -> None:
    inputs = _random_inputs(np.random.default_rng(T * 100 + B), T, B)
    got = _vtrace(
        **inputs, clip_rho_threshold=clip_rho, clip_pg_rho_threshold=clip_pg_rho, lambda_=lambda_
    )
    vs, pg = _ground_truth(**inputs, clip_rho=clip_rho, clip_pg_rho=clip_pg_rho, lambda_=lambda_)
    np.testing.assert_allclose(got.vs.numpy(), vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got.pg_advantages.numpy(), pg, rtol=1e-5, atol=1e-5)


def _two_steps(log_rhos: list[float], lambda_: float = 1.0) -> vtrace.VTraceReturns:
    return _vtrace(
        log_rhos=np.array([log_rhos], np.float32).T,
        discounts=np.full((2, 1), 0.9, np.float32),
        rewards=np.array([[1.0], [2.0]], np.float32),
        values=np.array([[0.5], [1.0]], np.float32),
        bootstrap_value=np.array([3.0], np.float32),
        lambda_=lambda_,
    )


def test_pinned_on_policy_is_n_step_return() -> None:
    # rho = c = 1: v_1 = 2 + .9*3 = 4.7, v_0 = 1 + .9*4.7 = 5.23.
    out = _two_steps([0.0, 0.0])
    np.testing.assert_allclose(out.vs.numpy()[:, 0], [5.23, 4.7], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantages.numpy()[:, 0], [4.73, 3.7], rtol=1e-6)


def test_pinned_clipped_and_lambda() -> None:
    # rho_0 = min(1, 2) = 1, rho_1 = c_1 = .5: delta_1 = .5 (2 + 2.7 - 1) = 1.85, delta_0 = 1.4.
    out = _two_steps([math.log(2.0), math.log(0.5)])
    np.testing.assert_allclose(out.vs.numpy()[:, 0], [3.565, 2.85], rtol=1e-6)
    np.testing.assert_allclose(out.pg_advantages.numpy()[:, 0], [3.065, 1.85], rtol=1e-6)
    # lambda = .5 halves c_0: v_0 = .5 + 1.4 + .9 * .5 * 1.85.
    out = _two_steps([math.log(2.0), math.log(0.5)], lambda_=0.5)
    np.testing.assert_allclose(out.vs.numpy()[0, 0], 2.7325, rtol=1e-6)


def test_lambda_zero_is_one_step_td() -> None:
    inputs = _random_inputs(np.random.default_rng(0), 7, 4)
    out = _vtrace(**inputs, lambda_=0.0)
    next_values = np.concatenate([inputs["values"][1:], inputs["bootstrap_value"][None]])
    rho = np.minimum(1.0, np.exp(inputs["log_rhos"]))
    expected = inputs["values"] + rho * (
        inputs["rewards"] + inputs["discounts"] * next_values - inputs["values"]
    )
    np.testing.assert_allclose(out.vs.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_zero_weight_step_passes_its_value_through() -> None:
    # A step with rho = 0 (the learner's truncation row) keeps v_s = V(x_s), so the
    # step before it bootstraps from V(x_s) with a full discount.
    out = _vtrace(
        log_rhos=np.array([[0.0], [-np.inf]], np.float32),
        discounts=np.array([[0.9], [0.0]], np.float32),
        rewards=np.array([[1.0], [0.0]], np.float32),
        values=np.array([[0.5], [4.0]], np.float32),
        bootstrap_value=np.array([-7.0], np.float32),
    )
    np.testing.assert_allclose(out.vs.numpy()[:, 0], [1.0 + 0.9 * 4.0, 4.0], rtol=1e-6)
    assert np.all(np.isfinite(out.pg_advantages.numpy()))


def test_rank_is_checked() -> None:
    with pytest.raises(ValueError):
        vtrace.from_importance_weights(*(np.zeros((3,), np.float32) for _ in range(5)))
