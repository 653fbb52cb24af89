"""The console's run panel describes every agent's run."""

import dataclasses

import pytest

from aioseed.server.config import LearnerConfig
from aioseed.server.run_info import KEY_HYPERPARAMETERS, describe


@pytest.mark.parametrize("agent", ["impala", "r2d2", "sac"])
def test_every_agent_gets_its_own_hyperparameters(agent: str) -> None:
    config = dataclasses.replace(LearnerConfig(env="CartPole-v1"), agent=agent, seed=3)
    info = describe(config, ("/CPU:0",), ("/CPU:0",), started=0.0)
    own = getattr(config, agent)
    assert info["agent"] == agent and info["seed"] == 3 and info["started"] == "1970-01-01T00:00:00+00:00"
    assert {name: info["hyperparameters"][name] for name in KEY_HYPERPARAMETERS[agent]} == {
        name: list(v) if isinstance(v, tuple) else v for name in KEY_HYPERPARAMETERS[agent] for v in [getattr(own, name)]
    }
    assert info["network"] == getattr(own, "network", "mlp")
