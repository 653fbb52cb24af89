"""Previous action and reward as network inputs: training replays exactly what inference saw."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.algos.extras import PREVIOUS_ACTION
from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(5,), observation_dtype="float32", action_space=3)
T, B = 12, 4


def run_inference(agent: ImpalaAgent, observations, rewards, starts):
    """As the learner runs it: state zeroed at starts (prev_action included), rewards zeroed there too."""
    state = {name: np.zeros((B, *shape), dtype) for name, (shape, dtype) in agent.state_columns().items()}
    first_state, logits, actions = None, [], []
    for t in range(T):
        state = {name: np.where(starts[t][:, None], 0.0, value).astype(np.float32) for name, value in state.items()}
        first_state = first_state or state
        out, state = agent.infer(observations[t], state, rewards=np.where(starts[t], 0.0, rewards[t]).astype(np.float32))
        logits.append(out["logits"])
        actions.append(out["action"])
    return first_state, np.stack(logits), np.stack(actions)


@pytest.mark.parametrize("lstm_size", [0, 8], ids=["feedforward", "lstm"])
def test_training_unroll_reproduces_inference(lstm_size: int) -> None:
    config = ImpalaConfig(previous_action_reward=True, lstm_size=lstm_size, hidden_sizes=(16,), reward_clipping="abs")
    agent = ImpalaAgent(SPEC, config, seed=0)
    assert agent.state_columns()[PREVIOUS_ACTION] == ((3,), np.float32)
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(T, B, 5)).astype(np.float32)
    rewards = rng.normal(scale=3.0, size=(T, B)).astype(np.float32)  # clipped to [-1, 1] on both sides
    starts = rng.random((T, B)) < 0.2
    starts[0] = True
    state, logits, actions = run_inference(agent, observations, rewards, starts)
    done, phantom = starts.copy(), np.zeros((T, B), bool)
    unroll = {"observation": observations, "action": actions, "done": done, "phantom": phantom, **state}
    replayed, _ = agent._unroll(unroll, agent._clip(rewards))
    np.testing.assert_allclose(replayed.numpy(), logits, atol=1e-5)

    # The inputs matter: other rewards in the middle of episodes change what the network computes.
    _, other_logits, _ = run_inference(agent, observations, rewards * -1.0, starts)
    assert np.abs(other_logits - logits)[~starts].max() > 1e-4


def test_train_step_and_export_signature_take_the_reward() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(previous_action_reward=True, epochs=2, ppo_clip=0.1), seed=0)
    rng = np.random.default_rng(1)
    batch = {
        "observation": rng.normal(size=(T + 1, B, 5)).astype(np.float32),
        "action": rng.integers(0, 3, (T + 1, B)).astype(np.int32),
        "logits": np.zeros((T + 1, B, 3), np.float32),
        "reward": rng.normal(size=(T + 1, B)).astype(np.float32),
        "done": np.zeros((T + 1, B), bool),
        "phantom": np.zeros((T + 1, B), bool),
        PREVIOUS_ACTION: np.eye(3, dtype=np.float32)[rng.integers(0, 3, B)],
    }
    applied: list[None] = []
    metrics = agent.train_step(batch, lambda: applied.append(None))
    assert len(applied) == 2 and np.isfinite(metrics["losses/total"])
    names = [spec.name for spec in agent.policy.act.input_signature]
    assert names == ["observations", PREVIOUS_ACTION, "reward"]
