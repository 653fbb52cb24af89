"""Learning-rate schedules over a frame budget, and the optimizer names configs take (no TensorFlow here)."""

from __future__ import annotations

import math
from typing import Literal

OptimizerKind = Literal["adam", "rmsprop"]
ScheduleKind = Literal["constant", "linear", "cosine"]


def schedule_factor(kind: ScheduleKind, fraction: float, final_fraction: float = 0.0) -> float:
    """The multiplier of the base learning rate after ``fraction`` of the budget (clamped to [0, 1]).

    constant: 1. linear: from 1 down to ``final_fraction`` at the budget's end. cosine: the same ends,
    along half a cosine wave (Loshchilov & Hutter 2017, without restarts).
    """
    f = min(max(fraction, 0.0), 1.0)
    if kind == "constant":
        return 1.0
    if kind == "linear":
        return 1.0 - (1.0 - final_fraction) * f
    if kind == "cosine":
        return final_fraction + (1.0 - final_fraction) * 0.5 * (1.0 + math.cos(math.pi * f))
    raise ValueError(f"unknown schedule {kind!r}; known: constant, linear, cosine")


def kl_adapted_rate(rate: float, kl: float, target_kl: float, factor: float = 1.5, low: float = 1e-6, high: float = 1e-2) -> float:
    """The next learning rate of the KL-adaptive rule (rl_games' ``AdaptiveScheduler``, rsl_rl's PPO): divided by
    ``factor`` when an update's approximate KL(proximal || current) exceeded twice ``target_kl``, multiplied by
    it when the KL stayed under half of it, otherwise kept; always within [``low``, ``high``]. A non-finite
    ``kl`` leaves the rate as it is."""
    if not math.isfinite(kl):
        return rate
    if kl > 2.0 * target_kl:
        rate /= factor
    elif kl < 0.5 * target_kl:
        rate *= factor
    return min(max(rate, low), high)
