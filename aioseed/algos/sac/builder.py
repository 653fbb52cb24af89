"""Soft actor-critic on continuous actions, as ``aioseed.algos.registry`` composes it."""

from __future__ import annotations

import dataclasses
from typing import Any

from aioseed.action_space import Box
from aioseed.algos.builder import Algorithm, ReplaySettings, Split
from aioseed.algos.live import LiveSetting, in_section
from aioseed.algos.sac.config import SacConfig


def make_agent(settings: SacConfig, spec: Any, replicas: Any, seed: int | None = None, precision: str = "float32", sides: int = 1) -> Any:
    from aioseed.algos.sac.agent import SacAgent

    return SacAgent(spec, settings, replicas, precision=precision)


def replay(settings: Any) -> ReplaySettings:
    """Uniform replay, no priorities and no importance weights, for SAC's or TD3's settings (the same fields)."""
    return ReplaySettings(
        capacity=settings.replay_capacity, priority_exponent=0.0, importance_exponent=0.0, min_size=settings.min_replay_size,
        ratio=settings.replay_ratio, checkpoint=settings.checkpoint_replay, acting_ahead=settings.acting_ahead,
    )


def split(settings: Any, batch_size: int, unroll_length: int) -> Split:
    """``minibatches`` updates per train batch, each on an equal share of its unrolls (SAC's or TD3's)."""
    return Split(settings.minibatches, batch_size, f"training.batch_size = {batch_size}")


def evaluation(settings: SacConfig, greedy: bool, epsilon: float) -> SacConfig:
    """The mean action when greedy, else a sample."""
    return dataclasses.replace(settings, evaluation_action="mean" if greedy else "sample")


LIVE = in_section("sac", (
    LiveSetting("replay_ratio", "float", 0.0, 65536.0, low_open=True, takes_effect="at the next sample; acting is credited at the new rate"),
))
"""What may change while SAC trains (its losses' constants are compiled in)."""


SAC = Algorithm(
    name="sac",
    section="sac",
    make_agent=make_agent,
    action_spaces=(Box,),
    replay=replay,
    split=split,
    pacing=frozenset({"replay"}),
    evaluation=evaluation,
    key_hyperparameters=(
        "learning_rate", "critic_learning_rate", "alpha_learning_rate", "discount", "tau", "initial_alpha",
        "autotune_alpha", "target_entropy", "replay_capacity", "min_replay_size", "replay_ratio", "hidden_sizes",
    ),
    live=LIVE,
)
