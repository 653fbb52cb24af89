"""Named starting points for ``aioseed run --preset NAME``; any other flag overrides the preset's value."""

from __future__ import annotations

import dataclasses
import pathlib
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.clients.football import FootballConfig
from aioseed.launch import RunConfig
from aioseed.server.training import TrainingConfig

def football_academy() -> RunConfig:
    """V-trace on Google Research Football's academy_empty_goal_close: SEED's Football ResNet on the
    stacked Super Mini Map, scoring reward, SEED's Adam learning rate. Stops at 90% of episodes scoring."""
    base = RunConfig()
    learner = dataclasses.replace(
        base.learner,
        env="football:academy_empty_goal_close",
        logdir=pathlib.Path("logs/football-academy"),
        football=FootballConfig(representation="extracted", stacked=True, rewards="scoring"),
        vtrace=ImpalaConfig(learning_rate=0.00048, discount=0.993, entropy_cost=0.003),
        training=TrainingConfig(unroll_length=32, batch_size=16),
        stop_at_return=0.9,
    )
    return dataclasses.replace(base, learner=learner, num_actors=2, envs_per_actor=8, envs_per_message=8)


def preset(name: str) -> RunConfig:
    """The ``RunConfig`` a preset names (``none``: the defaults, CartPole)."""
    match name:
        case "none":
            return RunConfig()
        case "football-academy":
            return dataclasses.replace(football_academy(), preset=name)
    raise ValueError(f"unknown preset {name!r}")
