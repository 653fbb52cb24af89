"""The LSTM core: a stored state plus a replayed unroll reproduces what step-by-step inference computed."""

from __future__ import annotations

import numpy as np

from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(5,), observation_dtype="float32", action_space=3)
T, B = 14, 4


def run_inference(agent: ImpalaAgent, observations: np.ndarray, starts: np.ndarray):
    """What the learner does per batch: zero the state at starts, infer, keep the next state."""
    state = {name: np.zeros((B, *shape), dtype) for name, (shape, dtype) in agent.state_columns().items()}
    states, logits = [], []
    for t in range(len(observations)):
        state = {name: np.where(starts[t][:, None], 0.0, value).astype(np.float32) for name, value in state.items()}
        states.append(state)
        out, state = agent.infer(observations[t], state)
        logits.append(out["logits"])
    return states, np.stack(logits)


def test_stored_state_and_unroll_reproduce_uninterrupted_inference() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(lstm_size=16, hidden_sizes=(32,)))
    rng = np.random.default_rng(0)
    observations = rng.normal(size=(T, B, 5)).astype(np.float32)
    starts = rng.random((T, B)) < 0.15
    starts[0] = True
    states, logits = run_inference(agent, observations, starts)

    for first in (0, 3, 8):  # an unroll starting mid-stream carries the state stored at its first step
        replayed, _ = agent.network.unroll(observations[first:], states[first], starts[first:])
        np.testing.assert_allclose(replayed.numpy(), logits[first:], atol=1e-5)

    # Without the stored state the replay differs: the core really carries information across steps.
    zeros = {name: np.zeros_like(value) for name, value in states[8].items()}
    assert np.abs(agent.network.unroll(observations[8:], zeros, starts[8:])[0].numpy() - logits[8:]).max() > 1e-4


def test_an_episode_start_forgets_everything_before_it() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(lstm_size=8, hidden_sizes=(16,)))
    rng = np.random.default_rng(1)
    observations = rng.normal(size=(T, B, 5)).astype(np.float32)
    other = observations.copy()
    other[:6] = rng.normal(size=(6, B, 5))  # a different past ...
    starts = np.zeros((T, B), bool)
    starts[0], starts[6] = True, True  # ... before an episode start at t = 6
    _, logits = run_inference(agent, observations, starts)
    _, other_logits = run_inference(agent, other, starts)
    np.testing.assert_allclose(logits[6:], other_logits[6:], atol=1e-6)
    assert np.abs(logits[:6] - other_logits[:6]).max() > 1e-4


def test_burn_in_from_a_stored_state_reproduces_the_uninterrupted_run() -> None:
    """R2D2: the state stored at an unroll's first step, burnt in over the first steps, continues exactly."""
    from aioseed.algos.r2d2.agent import build_q_network
    from aioseed.algos.r2d2.config import R2D2Config

    network = build_q_network(SPEC, R2D2Config(lstm_size=12, hidden_sizes=(16,)))
    rng = np.random.default_rng(2)
    observations = rng.normal(size=(T, B, 5)).astype(np.float32)
    starts = rng.random((T, B)) < 0.1
    state = {name: np.zeros((B, 12), np.float32) for name in ("core_h", "core_c")}
    stored, advantages = [], []
    for t in range(T):  # uninterrupted, as inference runs it
        state = {name: np.where(starts[t][:, None], 0.0, value).astype(np.float32) for name, value in state.items()}
        stored.append(state)
        a, _, state = network.step(observations[t], state)
        state = {name: value.numpy() for name, value in state.items()}
        advantages.append(a.numpy())
    first, burn = 2, 5
    warmed = network.burn_in(observations[first : first + burn], stored[first], starts[first : first + burn])
    learned, _ = network.unroll(observations[first + burn :], warmed, starts[first + burn :])
    np.testing.assert_allclose(learned.numpy(), np.stack(advantages[first + burn :]), atol=1e-5)
    for name, value in warmed.items():  # the stored state is the warmed one, reset where an episode starts
        reset = np.where(starts[first + burn][:, None], 0.0, value.numpy())
        np.testing.assert_allclose(reset, stored[first + burn][name], atol=1e-5)
