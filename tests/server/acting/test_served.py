"""aioseed serve's policy on an R2D2 agent: greedy serves epsilon 0 (the argmax of Q, every time), otherwise the
evaluation epsilon; a reload swaps what is served and its gauges."""

from __future__ import annotations

import dataclasses

import numpy as np

from aioseed.algos.r2d2.agent import R2D2Agent
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.compose.config import LearnerConfig
from aioseed.compose.policy import acting_function, acting_settings
from aioseed.server.acting.served import ServedPolicy, checkpoint_number
from aioseed.server.training.trainer import Progress
from aioseed.spec import EnvSpec

SPEC = EnvSpec((4,), "float32", 4)


def served(agent: R2D2Agent, greedy: bool) -> ServedPolicy:
    return ServedPolicy(
        act=acting_function(agent, greedy), restore=lambda path: Progress(7, 900), checkpoint="run/checkpoints/ckpt-3",
        frames=100, train_steps=3,
    )


def actions(policy: ServedPolicy, observations: np.ndarray, agent: R2D2Agent, repeats: int = 20) -> np.ndarray:
    state = {name: np.zeros((len(observations), *shape), np.float32) for name, (shape, _) in agent.state_columns().items()}
    return np.stack([policy.infer(observations, state)[0]["action"] for _ in range(repeats)])


def test_an_r2d2_policy_serves_greedy_at_epsilon_0_and_otherwise_at_its_evaluation_epsilon() -> None:
    saved = LearnerConfig(agent="r2d2", r2d2=R2D2Config(hidden_sizes=(16,), lstm_size=16))
    observations = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
    greedy_agent = R2D2Agent(SPEC, acting_settings(saved, greedy=True, epsilon=0.5).r2d2)
    greedy = actions(served(greedy_agent, greedy=True), observations, greedy_agent)
    assert (greedy == greedy[0]).all()  # epsilon 0: the same action for a row every time
    exploring_settings = acting_settings(saved, greedy=False, epsilon=1.0).r2d2
    assert exploring_settings.eval_epsilon == 1.0
    exploring_agent = R2D2Agent(SPEC, exploring_settings)
    exploring_agent.network.set_weights(greedy_agent.network.get_weights())
    exploring = actions(served(exploring_agent, greedy=False), observations, exploring_agent)
    assert len(np.unique(exploring)) == 4 and (exploring != greedy).mean() > 0.5  # epsilon 1: uniform actions


def test_a_reload_swaps_the_served_checkpoint_and_its_gauges() -> None:
    agent = R2D2Agent(SPEC, dataclasses.replace(R2D2Config(hidden_sizes=(16,), lstm_size=16), eval_epsilon=0.0))
    policy = served(agent, greedy=True)
    assert policy.metrics() == {"serve/train_steps": 3.0, "serve/frames": 100.0, "serve/checkpoint": 3.0, "serve/reloads": 0.0}
    policy.reload("run/checkpoints/ckpt-7")
    assert policy.metrics() == {"serve/train_steps": 7.0, "serve/frames": 900.0, "serve/checkpoint": 7.0, "serve/reloads": 1.0}
    assert checkpoint_number("run/checkpoints/latest") == -1


def test_a_policy_per_side_serves_each_row_with_its_sides_network_through_acting() -> None:
    from aioseed.algos.impala.agent import ImpalaAgent
    from aioseed.algos.impala.config import ImpalaConfig
    from aioseed.algos.impala.sides import SidedAgent
    from aioseed.server.acting.step import acting_for
    from aioseed.types import Rows

    spec = EnvSpec((4,), "float32", 5, players=(1, 1))
    config = ImpalaConfig(hidden_sizes=(16,))
    agent = SidedAgent(ImpalaAgent(spec, config, seed=0), ImpalaAgent(spec, config, seed=1))
    policy = ServedPolicy(
        act=acting_function(agent, greedy=True), restore=lambda path: Progress(7, 900), checkpoint="ckpt-3", frames=100,
        train_steps=3,
    )
    acting = acting_for(agent, spec, 4, lambda: 3, policy=policy)
    observations = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    right = np.arange(8) % 2 == 1
    rows = Rows(
        slot=np.arange(8, dtype=np.int32), run_id=np.ones(8, np.uint64), reward=np.zeros(8, np.float32),
        flags=np.zeros(8, np.uint8), observation=observations, evaluation=np.ones(8, bool), right=right,
    )
    served_actions = acting.step(rows).actions
    for side, network in ((~right, agent.left), (right, agent.right)):
        assert served_actions[side].tolist() == network.policy.greedy(observations[side])["logits"].numpy().argmax(-1).tolist()
