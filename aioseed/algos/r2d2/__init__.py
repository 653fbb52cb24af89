"""R2D2: recurrent replay distributed DQN. ``config`` has no TensorFlow; the math is loaded lazily."""

from __future__ import annotations

from typing import Any

from aioseed.algos.r2d2.config import R2D2Config

__all__ = ["R2D2Config", "inverse_value_rescale", "n_step_targets", "value_rescale"]


def __getattr__(name: str) -> Any:
    if name in ("value_rescale", "inverse_value_rescale", "n_step_targets"):
        from aioseed.algos.r2d2 import targets

        return getattr(targets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
