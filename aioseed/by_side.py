"""Rows of a multi-player game's two sides, each side's answered by its own policy and put back in row order:
self-play's frozen opponent (``aioseed.server.acting.step``), a policy per side (``aioseed.algos.impala.sides``)
and a loaded run's per-side policy (``aioseed.compose.policy``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Infer = Callable[..., tuple[dict[str, np.ndarray], dict[str, np.ndarray]]]
"""A policy's ``infer(observations, state, slots, evaluation, rewards) -> (outputs, next state)``."""


def merge_rows(parts: list[tuple[np.ndarray, dict[str, np.ndarray]]]) -> dict[str, np.ndarray]:
    """Row-aligned columns from (rows mask, columns of those rows) parts that cover every row once."""
    first = parts[0][1]
    size = len(parts[0][0])
    out = {name: np.empty((size, *column.shape[1:]), column.dtype) for name, column in first.items()}
    for rows, columns in parts:
        for name, column in columns.items():
            out[name][rows] = column
    return out


def rows_of(value: Any, rows: np.ndarray) -> Any:
    """The ``rows`` of a per-row array, of each array of a mapping (recurrent state), or None."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return {name: column[rows] for name, column in value.items()}
    return value[rows]


def infer_by_side(
    right: np.ndarray,
    left_infer: Infer,
    right_infer: Infer,
    observations: np.ndarray,
    state: Mapping[str, np.ndarray],
    slots: np.ndarray | None,
    evaluation: np.ndarray | None,
    rewards: np.ndarray | None,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """``left_infer`` on the rows ``right`` (<bool>[B]) leaves out and ``right_infer`` on the others: their outputs
    and next states in row order (a batch of one side's rows goes to its policy whole)."""
    arguments = (observations, state, slots, evaluation, rewards)
    if not right.any():
        return left_infer(*arguments)
    if right.all():
        return right_infer(*arguments)
    parts = [(rows, infer(*(rows_of(a, rows) for a in arguments))) for rows, infer in ((~right, left_infer), (right, right_infer))]
    return merge_rows([(rows, out) for rows, (out, _) in parts]), merge_rows([(rows, state) for rows, (_, state) in parts])
