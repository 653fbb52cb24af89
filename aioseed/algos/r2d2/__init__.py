"""R2D2: recurrent replay distributed DQN. ``config`` has no TensorFlow; the pure math it uses lives in
``aioseed.algos.n_step`` and ``aioseed.algos.value_rescaling``."""

from __future__ import annotations

from aioseed.algos.r2d2.config import R2D2Config

__all__ = ["R2D2Config"]
