"""The console's run panel describes every agent's run."""

import dataclasses

import pytest

from aioseed.algos.registry import algorithm
from aioseed.compose.config import LearnerConfig
from aioseed.compose.run_info import describe


@pytest.mark.parametrize("agent", ["impala", "r2d2", "sac"])
def test_every_agent_gets_its_own_hyperparameters(agent: str) -> None:
    config = dataclasses.replace(LearnerConfig(env="CartPole-v1"), agent=agent, seed=3)
    info = describe(config, ("/CPU:0",), ("/CPU:0",))
    own = getattr(config, agent)
    keys = algorithm(agent).key_hyperparameters
    assert keys and info["agent"] == agent and info["seed"] == 3
    assert {name: info["hyperparameters"][name] for name in keys} == {
        name: list(v) if isinstance(v, tuple) else v for name in keys for v in [getattr(own, name)]
    }
    assert info["network"] == getattr(own, "network", "mlp")
