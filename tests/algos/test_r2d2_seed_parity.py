"""R2D2 as SEED RL runs it: the previous action and reward as inputs, a hidden layer per dueling stream, a
sequence's loss summed over its steps, and new unrolls prioritised from the Q values inference acted with."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.extras import PREVIOUS_ACTION
from aioseed.algos.r2d2.agent import Q_TAKEN, R2D2Agent
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.algos.r2d2.loss import inference_priorities, r2d2_loss
from aioseed.algos.value_rescaling import inverse_value_rescale, value_rescale
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(5,), observation_dtype="float32", action_space=3)
BURN, T, B = 3, 8, 4
CONFIG = R2D2Config(
    lstm_size=8, hidden_sizes=(16,), dueling_hidden=16, burn_in=BURN, reward_clipping="abs", n_steps=2, eval_epsilon=0.0
)


def act(agent: R2D2Agent, observations: np.ndarray, rewards: np.ndarray, done: np.ndarray, phantom: np.ndarray, greedy: bool = False):
    """Inference as the learner runs it (``aioseed.server.acting``): state, the previous action included, and the
    reward input zeroed where an episode starts; epsilon-greedy per slot, or greedy (evaluation rows at epsilon
    0). Returns the state before each step, the actions and their Q values."""
    state = {name: np.zeros((B, *shape), dtype) for name, (shape, dtype) in agent.state_columns().items()}
    states, actions, q_taken = [], [], []
    starts = done & ~phantom
    for t in range(len(observations)):
        state = {name: np.where(starts[t][:, None], 0.0, value).astype(np.float32) for name, value in state.items()}
        states.append(state)
        rewards_in = np.where(starts[t], 0.0, rewards[t]).astype(np.float32)
        out, state = agent.infer(observations[t], state, np.arange(B), np.full(B, greedy), rewards=rewards_in)
        actions.append(out["action"])
        q_taken.append(out[Q_TAKEN])
    return states, np.stack(actions), np.stack(q_taken)


def episodes(steps: int) -> tuple[np.ndarray, np.ndarray]:
    """done and phantom <bool>[steps, B] as the env table marks them, one kind of boundary per env: a termination
    with its final observation (rows 6, 7), a truncation (9, 10), SEED's termination without one (4), none."""
    done, phantom = np.zeros((steps, B), bool), np.zeros((steps, B), bool)
    done[6, 0] = phantom[6, 0] = done[7, 0] = True
    phantom[9, 1] = done[10, 1] = True
    done[4, 2] = True
    return done, phantom


def test_seeds_settings_are_the_defaults() -> None:
    config = R2D2Config()
    assert (config.loss_reduction, config.previous_action_reward, config.dueling_hidden, config.initial_priority) == (
        "sum", True, 512, "inference",
    )
    agent = R2D2Agent(SPEC, R2D2Config(lstm_size=8, hidden_sizes=(16,)))
    assert agent.state_columns()[PREVIOUS_ACTION] == ((3,), np.float32)
    assert agent.output_columns()[Q_TAKEN] == ((), np.float32)
    # SEED's streams: LSTM -> Dense(512, relu) -> A (no bias) or V.
    advantage, value = agent.network.advantage_stream.layers, agent.network.value_stream.layers
    assert [tuple(w.shape) for w in advantage[0].weights + advantage[1].weights] == [(8, 512), (512,), (512, 3)]
    assert [tuple(w.shape) for w in value[0].weights + value[1].weights] == [(8, 512), (512,), (512, 1), (1,)]
    assert advantage[0].activation is value[0].activation is tf.keras.activations.relu
    assert not agent.network.base.policy.weights  # the actor-critic heads are not used
    with pytest.raises(ValueError, match="dueling_hidden"):
        R2D2Config(dueling_hidden=-1)


def test_training_replays_the_q_values_inference_acted_with() -> None:
    """From the state stored with an unroll's first step (mid-episode: a previous action is in it), after burn-in,
    the train step's online Q values of the actions taken are the ones inference computed, across episode
    boundaries of every kind, with previous actions and (clipped) rewards as inputs; and those inputs matter."""
    agent = R2D2Agent(SPEC, CONFIG)
    rng = np.random.default_rng(0)
    warm_up, steps = 3, BURN + T + 1  # the unroll starts at row 3 of what inference saw
    observations = rng.normal(size=(warm_up + steps, B, 5)).astype(np.float32)
    rewards = rng.normal(scale=3.0, size=(warm_up + steps, B)).astype(np.float32)  # beyond the clip on both sides
    done, phantom = episodes(warm_up + steps)
    states, actions, q_taken = act(agent, observations, rewards, done, phantom)
    unroll = slice(warm_up, None)
    stored = states[warm_up]
    assert np.abs(stored[PREVIOUS_ACTION]).sum(1).min() == 1.0  # every env's previous action is in the stored state
    inputs = {
        "observation": observations[unroll], "action": actions[unroll], "reward": rewards[unroll],  # stored unzeroed
        "done": done[unroll], "phantom": phantom[unroll], **stored,
    }
    q, target_q = agent._q_values({name: tf.constant(value) for name, value in inputs.items()})
    replayed = np.take_along_axis(q.numpy(), actions[warm_up + BURN :, :, None], -1)[..., 0]
    np.testing.assert_allclose(replayed, q_taken[warm_up + BURN :], atol=1e-5)
    np.testing.assert_allclose(target_q.numpy(), q.numpy(), atol=1e-6)  # the target is a copy until it updates

    _, _, greedy = act(agent, observations, rewards, done, phantom, greedy=True)
    _, _, negated = act(agent, observations, -rewards, done, phantom, greedy=True)  # the rewards are inputs
    assert np.abs(negated - greedy)[~(done & ~phantom)].max() > 1e-4
    no_inputs = R2D2Agent(SPEC, dataclasses.replace(CONFIG, previous_action_reward=False))
    assert PREVIOUS_ACTION not in no_inputs.state_columns()
    _, _, unmoved = act(no_inputs, observations, rewards, done, phantom, greedy=True)
    _, _, negated = act(no_inputs, observations, -rewards, done, phantom, greedy=True)
    np.testing.assert_array_equal(unmoved, negated)


def test_a_sequence_loss_is_summed_over_its_steps_as_seed_sums_it() -> None:
    rng = np.random.default_rng(1)
    q = tf.constant(rng.normal(size=(T + 1, B, 3)), tf.float32)
    arguments = dict(
        q=q, target_q=q + 0.3, actions=tf.constant(rng.integers(0, 3, (T + 1, B)), tf.int32),
        rewards=tf.constant(rng.normal(size=(T + 1, B)), tf.float32), done=tf.zeros((T + 1, B), tf.bool),
        phantom=tf.zeros((T + 1, B), tf.bool), importance_weights=tf.ones([B]), discount=0.99, n_steps=3,
    )
    summed, mean = r2d2_loss(**arguments), r2d2_loss(**arguments, reduction="mean")
    expected = tf.reduce_mean(0.5 * tf.reduce_sum(tf.square(summed.td), 0))
    assert float(summed.total) == pytest.approx(float(expected), rel=1e-6)
    assert float(summed.total) == pytest.approx(T * float(mean.total), rel=1e-5)
    np.testing.assert_allclose(summed.priorities, mean.priorities)


def test_inference_priorities_are_seeds_formula() -> None:
    """One-step targets by hand: delta_t = h(r_(t+1) + gamma (1 - done_(t+1)) h^-1(Q_(t+1))) - Q_t, priority
    eta max|delta| + (1 - eta) mean|delta| over the rows learned from (a phantom row has no delta)."""
    rng = np.random.default_rng(2)
    q_taken = rng.normal(size=(T + 1, B)).astype(np.float32)
    rewards = rng.normal(size=(T + 1, B)).astype(np.float32)
    done = np.zeros((T + 1, B), bool)
    done[4, 1] = True  # a termination: row 3's target is its reward alone
    phantom = np.zeros((T + 1, B), bool)
    phantom[4, 1] = True
    priorities = inference_priorities(
        tf.constant(q_taken), tf.constant(rewards), tf.constant(done), tf.constant(phantom), 0.9, 1, priority_eta=0.75
    ).numpy()
    bootstrap = inverse_value_rescale(tf.constant(q_taken[1:])).numpy() * (1.0 - done[1:])
    delta = value_rescale(tf.constant(rewards[1:] + 0.9 * bootstrap)).numpy() - q_taken[:-1]
    delta[4, 1] = 0.0  # the phantom row's
    rows = (~phantom[:-1]).sum(0)
    expected = 0.75 * np.abs(delta).max(0) + 0.25 * np.abs(delta).sum(0) / rows
    np.testing.assert_allclose(priorities, expected, rtol=1e-5)


def seed_n_step_bellman_target(rewards: np.ndarray, done: np.ndarray, q_target: np.ndarray, gamma: float, n: int) -> np.ndarray:
    """seed_rl/agents/r2d2/learner.py's n_step_bellman_target, in NumPy."""
    target = np.concatenate([np.zeros_like(q_target[:1]), q_target] + [q_target[-1:] / gamma**k for k in range(1, n)])
    done = np.concatenate([done] + [np.zeros_like(done[:1])] * n)
    rewards = np.concatenate([rewards] + [np.zeros_like(rewards[:1])] * n)
    for _ in range(n):
        rewards, done = rewards[:-1], done[:-1]
        target = rewards + gamma * (1.0 - done) * target[1:]
    return target


def test_inference_priorities_are_seeds_with_n_step_windows() -> None:
    """SEED's compute_loss_and_priorities_from_agent_outputs with inference's outputs for both networks: n = 3, a
    termination in the middle (SEED's rows have no phantom), and the shortened windows at the unroll's end."""
    rng = np.random.default_rng(4)
    q_taken = rng.normal(size=(T + 1, B)).astype(np.float32)
    rewards = rng.normal(size=(T + 1, B)).astype(np.float32)
    done = np.zeros((T + 1, B), bool)
    done[3, 0] = done[T, 1] = True
    bootstrap = inverse_value_rescale(tf.constant(q_taken)).numpy()
    targets = value_rescale(tf.constant(seed_n_step_bellman_target(rewards, done, bootstrap, 0.99, 3)[1:])).numpy()
    delta = np.abs(targets - q_taken[:-1])
    expected = 0.9 * delta.max(0) + 0.1 * delta.mean(0)
    priorities = inference_priorities(*map(tf.constant, (q_taken, rewards, done, np.zeros_like(done))), 0.99, 3).numpy()
    np.testing.assert_allclose(priorities, expected, rtol=1e-5)


def test_new_unrolls_are_prioritised_from_what_inference_stored() -> None:
    agent = R2D2Agent(SPEC, CONFIG)
    rng = np.random.default_rng(3)
    steps = BURN + T + 1
    unrolls = [
        {
            Q_TAKEN: rng.normal(size=steps).astype(np.float32), "reward": rng.normal(size=steps).astype(np.float32),
            "done": np.zeros(steps, bool), "phantom": np.zeros(steps, bool),
        }
        for _ in range(5)
    ]
    priorities = agent.initial_priorities(unrolls)
    q_taken, rewards, done, phantom = (np.stack([u[name][BURN:] for u in unrolls], 1) for name in (Q_TAKEN, "reward", "done", "phantom"))
    rewards = np.clip(rewards, -1.0, 1.0)  # reward_clipping abs, as in training
    expected = inference_priorities(*map(tf.constant, (q_taken, rewards, done, phantom)), CONFIG.discount, CONFIG.n_steps, CONFIG.value_rescale_eps, CONFIG.priority_eta)
    np.testing.assert_allclose(priorities, expected.numpy(), rtol=1e-6)
    unrolls[2][Q_TAKEN][BURN] = np.nan  # a diverged network: NaN, which the replay gives its largest priority
    priorities = agent.initial_priorities(unrolls)
    assert np.isnan(priorities[2]) and np.isfinite(np.delete(priorities, 2)).all()
    largest = R2D2Agent(SPEC, dataclasses.replace(CONFIG, initial_priority="max"))
    assert Q_TAKEN not in largest.output_columns() and largest.initial_priorities(unrolls) is None
