"""The TensorFlow envs step as their gymnasium twins do: CartPole's dynamics step for step from the
same state, Catch's frames and rewards; ended episodes reset inside the step."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import tensorflow as tf

from aioseed.anakin.envs import CartPole, Catch, step
from aioseed.envs.catch import Catch as GymCatch

SEED = tf.constant([7, 0], tf.int64)


@pytest.mark.parametrize("episode_seed", [0, 1, 2])
def test_cartpole_follows_gymnasium_step_for_step(episode_seed: int) -> None:
    reference = gym.make("CartPole-v1").unwrapped
    observation, _ = reference.reset(seed=episode_seed)
    env = CartPole()
    state = {"physics": tf.constant(reference.state[None], tf.float64), "steps": tf.zeros([1], tf.int32)}
    np.testing.assert_array_equal(env.observe(state).numpy()[0], observation)
    rng = np.random.default_rng(episode_seed)
    for t in range(500):
        action = int(rng.integers(2))
        observation, reward, terminated, truncated, _ = reference.step(action)
        physics = env.dynamics(state["physics"], tf.constant([action]))
        np.testing.assert_allclose(physics.numpy()[0], reference.state, rtol=0, atol=1e-12)
        state, tf_reward, tf_terminated, tf_truncated, _ = step(env, state, tf.constant([action]), SEED)
        assert (bool(tf_terminated[0]), float(tf_reward[0])) == (terminated, reward), t
        if terminated:
            assert int(state["steps"][0]) == 0 and np.abs(state["physics"].numpy()).max() <= 0.05  # reset in the step
            break
        np.testing.assert_array_equal(env.observe(state).numpy()[0], observation)
    assert terminated, "a random policy drops the pole well within 500 steps"


def test_cartpole_truncates_at_max_steps_and_resets() -> None:
    env = CartPole(max_steps=3)
    state = env.reset(4, SEED)
    ended = []
    for _ in range(3):
        state, _, terminated, truncated, final = step(env, state, tf.constant([0, 1, 0, 1]), SEED)
        ended.append(truncated.numpy() | terminated.numpy())
    assert ended[-1].all() and not ended[0].any()
    assert (state["steps"].numpy() == 0).all()
    assert (final["steps"].numpy() == 3).all()  # the states the episodes ended in, for the bootstrap


def test_catch_draws_and_pays_as_aioseeds_catch() -> None:
    reference = GymCatch()
    env = Catch()
    for column in range(reference.columns):
        reference.reset(seed=0)
        reference._ball = (0, column)  # the same start in both
        state = {"ball_row": tf.constant([0]), "ball_column": tf.constant([column]), "paddle": tf.constant([2])}
        rng = np.random.default_rng(column)
        for _ in range(reference.rows - 1):
            np.testing.assert_array_equal(env.observe(state).numpy()[0], reference._observation())
            action = int(rng.integers(3))
            _, reward, terminated, _, _ = reference.step(np.int64(action))
            state, tf_reward, tf_terminated, _, _ = step(env, state, tf.constant([action]), SEED)
            assert (float(tf_reward[0]), bool(tf_terminated[0])) == (reward, terminated)
        assert terminated and int(state["ball_row"][0]) == 0  # the next episode has begun
