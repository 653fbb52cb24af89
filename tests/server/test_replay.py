"""Prioritized sequence replay and its sum tree (pure NumPy, no TensorFlow)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from aioseed.server.replay import Replay
from aioseed.server.sum_tree import SumTree

CHI2_DF4_P001 = 18.47  # chi-square critical value, 4 degrees of freedom, p = 0.001


def unrolls(*names: int) -> list[dict[str, int]]:
    return [{"name": n} for n in names]


def test_sum_tree_finds_the_leaf_holding_each_prefix_mass() -> None:
    rng = np.random.default_rng(0)
    tree = SumTree(13)
    values = rng.random(13) * (rng.random(13) < 0.7)  # some zero leaves
    tree.set(np.arange(13), values)
    assert tree.total == pytest.approx(values.sum())
    masses = rng.random(1000) * values.sum()
    expected = np.searchsorted(np.cumsum(values), masses, side="right")
    np.testing.assert_array_equal(tree.find(masses), expected)
    assert (values[tree.find(masses)] > 0).all()


def test_sampling_frequencies_follow_priority_to_the_alpha() -> None:
    replay = Replay(capacity=8, priority_exponent=0.9, seed=1)
    priorities = np.array([1.0, 2.0, 4.0, 8.0, 0.5])
    replay.insert(unrolls(0, 1, 2, 3, 4), priorities)
    counts = np.zeros(5)
    for _ in range(400):
        _, items, _ = replay.sample(50)
        np.add.at(counts, [u["name"] for u in items], 1)
    expected = priorities**0.9 / (priorities**0.9).sum() * counts.sum()
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < CHI2_DF4_P001, (counts, expected)
    # alpha matters: proportional-to-p frequencies would be rejected
    plain = priorities / priorities.sum() * counts.sum()
    assert ((counts - plain) ** 2 / plain).sum() > CHI2_DF4_P001


def test_importance_weights_are_n_p_to_the_minus_beta_over_the_batch_max() -> None:
    replay = Replay(capacity=16, priority_exponent=0.7, importance_exponent=0.6, seed=2)
    priorities = np.array([0.3, 1.0, 5.0, 2.0])
    replay.insert(unrolls(0, 1, 2, 3), priorities)
    ids, items, weights = replay.sample(32)
    p = priorities**0.7 / (priorities**0.7).sum()
    names = [u["name"] for u in items]
    raw = (4 * p[names]) ** -0.6
    np.testing.assert_allclose(weights, raw / raw.max(), rtol=1e-6)
    assert weights.dtype == np.float32 and weights.max() == 1.0
    assert [int(i) for i in ids] == names  # ids are insertion numbers


def test_the_oldest_unrolls_are_evicted_first() -> None:
    replay = Replay(capacity=3, seed=3)
    ids = replay.insert(unrolls(0, 1, 2, 3, 4))
    assert ids.tolist() == [0, 1, 2, 3, 4] and len(replay) == 3
    seen = {u["name"] for _ in range(50) for u in replay.sample(8)[1]}
    assert seen == {2, 3, 4}
    replay.insert(unrolls(5))
    seen = {u["name"] for _ in range(50) for u in replay.sample(8)[1]}
    assert seen == {3, 4, 5}


def test_priority_updates_take_effect_and_evicted_ids_are_ignored() -> None:
    replay = Replay(capacity=4, seed=4)
    replay.insert(unrolls(0, 1, 2, 3))
    assert replay.update_priorities(np.array([0, 1, 2, 3]), np.array([0.0, 0.0, 0.0, 5.0])) == 4
    assert {u["name"] for u in replay.sample(64)[1]} == {3}
    replay.insert(unrolls(4))  # evicts id 0; its slot now holds id 4 (max priority 5)
    assert replay.update_priorities(np.array([0]), np.array([0.0])) == 0  # stale: not applied to id 4
    ids, items, _ = replay.sample(64)
    assert {u["name"] for u in items} == {3, 4} and set(ids.tolist()) == {3, 4}
    # New unrolls get the largest priority seen so far.
    replay.update_priorities(np.array([3]), np.array([50.0]))
    replay.insert(unrolls(5))
    counts = np.bincount([u["name"] for u in replay.sample(1000)[1]], minlength=6)
    assert counts[5] == pytest.approx(counts[3], rel=0.2) and counts[4] < counts[3] / 5


def test_bad_priorities_are_refused() -> None:
    replay = Replay(capacity=4)
    with pytest.raises(ValueError, match="finite priorities"):
        replay.insert(unrolls(0, 1), np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match="need 2"):
        replay.insert(unrolls(0, 1), np.array([1.0]))
    with pytest.raises(LookupError):
        replay.sample(1)


def test_concurrent_inserts_and_samples_are_serialized() -> None:
    replay = Replay(capacity=64, seed=5)
    replay.insert(unrolls(*range(8)))
    errors: list[BaseException] = []

    def insert() -> None:
        for i in range(500):
            replay.insert(unrolls(i), np.array([1.0 + i % 7]))

    def sample() -> None:
        try:
            for _ in range(500):
                ids, items, weights = replay.sample(16)
                assert all(item is not None for item in items) and np.isfinite(weights).all()
                replay.update_priorities(ids, np.ones(16))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=insert), threading.Thread(target=sample)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and replay.inserted == 508 and replay.sampled == 8000
