"""R2D2 math: value rescaling and its inverse, n-step targets against a slow reference."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.n_step import n_step_targets
from aioseed.algos.value_rescaling import inverse_value_rescale, value_rescale


def test_rescale_then_inverse_is_the_identity_over_a_wide_range() -> None:
    x = np.concatenate([-np.logspace(-6, 6, 500), [0.0], np.logspace(-6, 6, 500)]).astype(np.float64)
    for eps in (1e-3, 1e-2):
        there_and_back = inverse_value_rescale(value_rescale(tf.constant(x), eps), eps).numpy()
        np.testing.assert_allclose(there_and_back, x, rtol=1e-9, atol=1e-9)
        back_and_there = value_rescale(inverse_value_rescale(tf.constant(x), eps), eps).numpy()
        np.testing.assert_allclose(back_and_there, x, rtol=1e-9, atol=1e-9)


def test_rescale_pinned_values() -> None:
    got = value_rescale(tf.constant([0.0, 3.0, -8.0, 99.0], tf.float64)).numpy()
    np.testing.assert_allclose(got, [0.0, 1.003, -2.008, 9.099])


def slow_n_step_targets(r, discount, v, stop, n):
    """G_t written out: walk k = 1..n from t, stop at the trajectory end or a stop row, then bootstrap."""
    steps, batch = r.shape
    out = np.zeros((steps - 1, batch))
    for b in range(batch):
        for t in range(steps - 1):
            g, scale = 0.0, 1.0
            for k in range(1, n + 1):
                row = t + k
                g += scale * r[row, b]
                scale *= discount[row, b]
                if stop[row, b] or row == steps - 1 or k == n:
                    g += scale * v[row, b]
                    break
            out[t, b] = g
    return out


@pytest.mark.parametrize("n", [1, 2, 5, 11])
def test_n_step_targets_match_the_slow_reference_with_episode_ends_in_the_window(n: int) -> None:
    rng = np.random.default_rng(n)
    steps, batch, gamma = 16, 7, 0.97
    r = rng.normal(size=(steps, batch))
    terminated = rng.random((steps, batch)) < 0.1
    stop = rng.random((steps, batch)) < 0.1  # final observations (the truncated ones keep their discount)
    discount = np.where(terminated, 0.0, gamma)
    v = rng.normal(size=(steps, batch))
    got = n_step_targets(*(tf.constant(x, tf.float64) for x in (r, discount, v)), tf.constant(stop), n).numpy()
    np.testing.assert_allclose(got, slow_n_step_targets(r, discount, v, stop, n), rtol=1e-12)
    assert terminated.any() and stop.any()


def test_n_step_targets_pinned_numbers() -> None:
    # rows:      0    1    2    3    4
    r = [[0.0], [1.0], [2.0], [3.0], [4.0]]
    discount = [[0.5], [0.5], [0.0], [0.5], [0.5]]  # the transition into row 2 terminates
    v = [[10.0], [20.0], [30.0], [40.0], [50.0]]
    stop = [[False], [False], [False], [True], [False]]  # row 3 is a truncated episode's final observation
    got = n_step_targets(*(tf.constant(x, tf.float64) for x in (r, discount, v)), tf.constant(stop), 3).numpy()[:, 0]
    expected = [
        1.0 + 0.5 * 2.0,  # t=0: r1 + d1 r2, then d2 = 0 cuts r3 and the bootstrap
        2.0,  # t=1: r2, then nothing
        3.0 + 0.5 * 40.0,  # t=2: r3 and bootstrap from the final observation (row 3), not past it
        4.0 + 0.5 * 50.0,  # t=3: the trajectory ends at row 4
    ]
    np.testing.assert_allclose(got, expected)


def test_one_step_targets_are_td0() -> None:
    rng = np.random.default_rng(0)
    r, v = rng.normal(size=(9, 3)), rng.normal(size=(9, 3))
    discount = np.where(rng.random((9, 3)) < 0.2, 0.0, 0.99)
    stop = rng.random((9, 3)) < 0.2
    got = n_step_targets(*(tf.constant(x, tf.float64) for x in (r, discount, v)), tf.constant(stop), 1).numpy()
    np.testing.assert_allclose(got, r[1:] + discount[1:] * v[1:])


def test_inputs_must_be_time_major_matrices() -> None:
    with pytest.raises(ValueError, match="r_t must be"):
        n_step_targets(tf.zeros([3]), tf.zeros([3, 1]), tf.zeros([3, 1]), tf.zeros([3, 1], tf.bool), 2)
