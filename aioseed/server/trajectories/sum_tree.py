"""A sum tree over leaf priorities (pure NumPy): O(log n) updates and prefix-sum lookups, vectorized."""

from __future__ import annotations

import numpy as np


class SumTree:
    """Verbs: ``set`` leaf values, ``get`` them, ``find`` the leaves holding prefix-sum masses."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._leaves = 1 << (capacity - 1).bit_length()
        self._tree = np.zeros(2 * self._leaves, np.float64)  # node i has children 2i, 2i + 1; the root is 1

    @property
    def total(self) -> float:
        return float(self._tree[1])

    def set(self, indices: np.ndarray, values: np.ndarray) -> None:
        """Sets leaves ``indices`` (distinct) to ``values`` (>= 0) and updates their ancestors."""
        values = np.asarray(values, np.float64)
        if (values < 0).any() or not np.isfinite(values).all():
            raise ValueError("sum tree values must be finite and >= 0")
        nodes = np.asarray(indices, np.int64) + self._leaves
        if len(nodes) == 0:
            return
        self._tree[nodes] = values
        while nodes[0] > 1:
            nodes = np.unique(nodes // 2)
            self._tree[nodes] = self._tree[2 * nodes] + self._tree[2 * nodes + 1]

    def get(self, indices: np.ndarray) -> np.ndarray:
        return self._tree[np.asarray(indices, np.int64) + self._leaves]

    def find(self, masses: np.ndarray) -> np.ndarray:
        """For each mass in [0, total): the leaf i with sum(leaves[:i]) <= mass < sum(leaves[:i + 1])."""
        masses = np.array(masses, np.float64)
        nodes = np.ones(len(masses), np.int64)
        while nodes[0] < self._leaves:
            left = 2 * nodes
            left_sum = self._tree[left]
            # Rounding can push a mass past the left sum into an empty right subtree; stay left then.
            right = (masses >= left_sum) & (self._tree[left + 1] > 0)
            masses -= np.where(right, left_sum, 0.0)
            nodes = left + right
        return nodes - self._leaves
