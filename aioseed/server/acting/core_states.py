"""Per-env recurrent state kept on the learner, indexed by slot (pure NumPy).

Parameters and recurrent state never leave the learner: inference reads each
row's state here, zeroed where an episode (or a fresh unroll) starts, and
writes back the state the policy returns.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from aioseed.algos.agent import zero_state
from aioseed.types import Column


def grown(array: np.ndarray, capacity: int) -> np.ndarray:
    """``array`` with its first axis enlarged to ``capacity``; the new rows are zero."""
    out = np.zeros((capacity, *array.shape[1:]), array.dtype)
    out[: len(array)] = array
    return out


class CoreStates:
    """Verbs: ``read`` the state of slots, ``write`` their next state."""

    def __init__(self, columns: Mapping[str, Column]) -> None:
        self._arrays = zero_state(columns, 16)

    def read(self, slots: np.ndarray, starts: np.ndarray) -> dict[str, np.ndarray]:
        """The state of ``slots`` (copies), zeroed where ``starts``."""
        if not self._arrays:
            return {}
        self._ensure(int(slots.max()) + 1 if len(slots) else 0)
        state = {name: array[slots] for name, array in self._arrays.items()}
        if starts.any():
            for value in state.values():
                value[starts] = 0
        return state

    def write(self, slots: np.ndarray, state: Mapping[str, np.ndarray]) -> None:
        for name, array in self._arrays.items():
            array[slots] = state[name]

    def _ensure(self, size: int) -> None:
        capacity = len(next(iter(self._arrays.values())))
        if size > capacity:
            self._arrays = {name: grown(a, max(size, 2 * capacity)) for name, a in self._arrays.items()}
