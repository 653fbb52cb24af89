"""The algorithms' records: what the composition root, evaluation and serving read instead of naming one."""

from __future__ import annotations

import subprocess
import sys

import pytest

from aioseed.action_space import Box, Discrete
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.algos.registry import ALGORITHMS, algorithm
from aioseed.algos.sac.config import SacConfig
from aioseed.algos.td3.config import Td3Config
from aioseed.errors import InvalidInput


def test_each_algorithm_says_what_it_learns_trains_from_and_how_it_acts_in_evaluation() -> None:
    impala, r2d2, sac, td3 = (algorithm(name) for name in ("impala", "r2d2", "sac", "td3"))
    assert [name for name, entry in ALGORITHMS.items() if entry.learns(Box((1,), (-1.0,), (1.0,)))] == ["impala", "sac", "td3"]
    assert impala.learns(Discrete(3)) and r2d2.learns(Discrete(3)) and not sac.learns(Discrete(3))
    assert impala.replay is None and r2d2.replay(R2D2Config()).priority_exponent == 0.9
    uniform = sac.replay(SacConfig())
    assert (uniform.priority_exponent, uniform.importance_exponent, uniform.acting_ahead) == (0.0, 0.0, 64)
    assert (impala.pacing, sac.pacing, r2d2.pacing) == ({"bounded", "synchronous"}, {"replay"}, {"replay"})
    assert impala.actor_policy and impala.separate_sides and not r2d2.actor_policy and not sac.actor_policy
    split = impala.split(ImpalaConfig(minibatches=4, minibatch="transitions"), 8, 16)
    assert (split.minibatches, split.rows) == (4, 128)
    assert r2d2.evaluation(R2D2Config(), greedy=True, epsilon=0.01).eval_epsilon == 0.0
    assert r2d2.policy_name(r2d2.evaluation(R2D2Config(), False, 0.01), False) == "epsilon 0.01"
    assert sac.evaluation(SacConfig(), greedy=False, epsilon=0.0).evaluation_action == "sample"
    assert impala.policy_name(ImpalaConfig(), True) == "greedy" and impala.evaluation_fields(ImpalaConfig()) == {}
    # TD3 shares SAC's uniform replay and batch split, on its own settings.
    assert td3.replay(Td3Config(min_replay_size=7)).min_size == 7 and td3.pacing == {"replay"} and not td3.actor_policy
    assert td3.split(Td3Config(minibatches=4), 1024, 1).minibatches == 4
    noisy = td3.evaluation(Td3Config(exploration_noise=0.2), greedy=False, epsilon=0.0)
    assert td3.policy_name(noisy, False) == "exploration noise 0.2" and td3.policy_name(noisy, True) == "greedy"
    assert [setting.section for setting in td3.live] == ["td3"]


def test_an_unknown_agent_names_the_close_matches() -> None:
    with pytest.raises(InvalidInput, match="unknown agent 'r2d3'; did you mean r2d2"):
        algorithm("r2d3")


def test_the_registry_loads_no_tensorflow() -> None:
    """Config checks and the CLI read it before anything starts."""
    code = "import sys, aioseed.algos.registry; assert 'tensorflow' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
