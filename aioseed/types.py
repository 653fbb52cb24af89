"""Data types shared along the data path (actor -> stream -> learner), defined once."""

from __future__ import annotations

from typing import Any

Column = tuple[tuple[int, ...], Any]
"""A per-row column of a step or unroll: (shape of one row's value, NumPy dtype)."""

# Row flags on the wire (``Steps.flags``, one byte per row) and in the learner's per-env bookkeeping.
TERMINATED = 1
"""The episode ended in a terminal state: no bootstrap."""
TRUNCATED = 2
"""The episode was cut (time limit): bootstrap from the final observation, which the row carries."""
FINAL = 4
"""The row carries the episode's final observation (gymnasium's next-step autoreset); its action is not run."""
VALID_FLAG_BYTES = bytes([0, TERMINATED, TRUNCATED, TERMINATED | TRUNCATED, FINAL | TERMINATED, FINAL | TRUNCATED, FINAL | TERMINATED | TRUNCATED])
"""Flag bytes a row may carry: terminated and truncated in any combination, FINAL only with one of them."""
