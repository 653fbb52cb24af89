"""R2D2: recurrent replay distributed DQN, as ``aioseed.algos.registry`` composes it."""

from __future__ import annotations

import dataclasses
from typing import Any

from aioseed.action_space import Discrete
from aioseed.algos.builder import Algorithm, ReplaySettings
from aioseed.algos.live import LiveSetting, in_section
from aioseed.algos.r2d2.config import R2D2Config


def make_agent(settings: R2D2Config, spec: Any, replicas: Any, seed: int | None = None, precision: str = "float32", sides: int = 1) -> Any:
    from aioseed.algos.r2d2.agent import R2D2Agent

    return R2D2Agent(spec=spec, config=settings, replicas=replicas, precision=precision)


def replay(settings: R2D2Config) -> ReplaySettings:
    """Prioritised sequence replay."""
    return ReplaySettings(
        capacity=settings.replay_capacity, priority_exponent=settings.priority_exponent,
        importance_exponent=settings.importance_exponent, min_size=settings.min_replay_size, ratio=settings.replay_ratio,
        checkpoint=settings.checkpoint_replay,
    )


def evaluation(settings: R2D2Config, greedy: bool, epsilon: float) -> R2D2Config:
    """Epsilon-greedy at ``epsilon`` (0 when greedy)."""
    return dataclasses.replace(settings, eval_epsilon=0.0 if greedy else epsilon)


LIVE = in_section("r2d2", (
    LiveSetting("epsilon_base", "float", 0.0, 1.0, takes_effect="at the next inference batch"),
    LiveSetting("epsilon_alpha", "float", 0.0, 64.0, takes_effect="at the next inference batch"),
    LiveSetting("eval_epsilon", "float", 0.0, 1.0, takes_effect="at the next inference batch"),
    LiveSetting("target_update_period", "int", 1, None, takes_effect="from the next train step: the copy when the update count is a multiple"),
    LiveSetting("replay_ratio", "float", 0.0, 65536.0, low_open=True, takes_effect="at the next sample; acting is credited at the new rate"),
))
"""What may change while R2D2 trains: its exploration, target period and replay ratio are read from Python."""


R2D2 = Algorithm(
    name="r2d2",
    section="r2d2",
    make_agent=make_agent,
    action_spaces=(Discrete,),
    replay=replay,
    pacing=frozenset({"replay"}),
    evaluation=evaluation,
    policy_name=lambda settings, greedy: "greedy" if greedy else f"epsilon {settings.eval_epsilon:g}",
    evaluation_fields=lambda settings: {"epsilon": settings.eval_epsilon},
    key_hyperparameters=(
        "learning_rate", "discount", "n_steps", "burn_in", "target_update_period", "replay_capacity",
        "min_replay_size", "replay_ratio", "priority_exponent", "importance_exponent", "lstm_size",
        "dueling_hidden", "previous_action_reward", "loss_reduction", "initial_priority",
    ),
    live=LIVE,
)
