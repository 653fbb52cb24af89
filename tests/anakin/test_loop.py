"""Anakin's compiled rollout: the learner's unroll layout, and a truncated episode's last reward
carries the bootstrap ``discount * V(final observation)`` while a terminated one's does not; its
training loop moves the learning-rate and entropy schedules by its frames."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.impala.agent import ENTROPY_COST, ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.anakin.envs import CartPole, Catch
from aioseed.anakin.loop import Anakin
from aioseed.compose.config import LearnerConfig
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(4,), observation_dtype="float32", action_space=2)


def test_a_truncated_episode_learns_its_bootstrap_value_and_reports_the_env_return() -> None:
    keras.utils.set_random_seed(0)  # the weights, whatever ran before
    config = ImpalaConfig(hidden_sizes=(16,), discount=0.9)
    agent = ImpalaAgent(SPEC, config, seed=0)
    anakin = Anakin(CartPole(max_steps=3), agent, envs=4, unroll_length=3, batch_size=4, seed=0, window=4)
    rollout, episodes = anakin.act()
    assert rollout["observation"].shape == (4, 4, 4) and float(episodes) == 4.0
    # No random policy ends CartPole within 3 steps: every episode is truncated after its third step,
    # in the state the third step reached; its value there is bootstrapped into that step's reward.
    np.testing.assert_array_equal(rollout["done"].numpy()[1:].T, [[False, False, True]] * 4)
    last = rollout["observation"].numpy()[2]
    actions = rollout["action"].numpy()[2]
    final = CartPole().dynamics(tf.constant(last, tf.float64), tf.constant(actions))
    _, value, _ = agent.network.step(tf.cast(final, tf.float32), {}, None)
    assert np.abs(value.numpy()).max() > 1e-3  # the check below tells a bootstrap from none
    np.testing.assert_allclose(rollout["reward"].numpy()[3], 1.0 + 0.9 * value.numpy(), rtol=1e-5)
    np.testing.assert_array_equal(rollout["reward"].numpy()[1:3], np.ones((2, 4)))
    assert anakin.mean_return() == 3.0  # what the env paid, without the bootstrap


def test_reward_clipping_with_a_truncating_env_is_refused() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(16,), reward_clipping="abs"), seed=0)
    with pytest.raises(ValueError, match="reward clipping would clip it"):
        Anakin(CartPole(), agent, envs=4, unroll_length=3, batch_size=4)
    catch = Catch()
    spec = EnvSpec(observation_shape=catch.observation_shape, observation_dtype="uint8", action_space=3)
    Anakin(catch, ImpalaAgent(spec, ImpalaConfig(reward_clipping="abs"), seed=0), envs=4, unroll_length=3, batch_size=4)


@pytest.mark.parametrize("option", ["normalize_observations", "scale_rewards"])
def test_the_learners_running_statistics_are_refused(option: str) -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(16,), **{option: True}), seed=0)
    with pytest.raises(ValueError, match="are for the learner"):
        Anakin(CartPole(), agent, envs=4, unroll_length=3, batch_size=4)


@pytest.mark.parametrize("option", [{"epochs": 2}, {"minibatches": 2}, {"ppo_clip": 0.1}, {"targets": "gae"}])
def test_ppo_style_sample_reuse_is_refused_rather_than_ignored(option: dict) -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(16,), **option), seed=0)
    with pytest.raises(ValueError, match="one V-trace update per batch"):
        Anakin(CartPole(), agent, envs=4, unroll_length=3, batch_size=4)


def test_the_learning_rate_and_entropy_schedules_follow_anakins_frames(tmp_path) -> None:
    from aioseed.anakin.run import train
    from aioseed.results.curves import _session_values
    from aioseed.server.config import StopConfig
    from aioseed.server.training.trainer import TrainingConfig

    budget = 8 * 16 * 10  # ten iterations of 8 envs x 16 steps
    impala = ImpalaConfig(
        hidden_sizes=(16,), learning_rate=1e-3, lr_schedule="linear", lr_frames=budget,
        entropy_cost=0.01, entropy_schedule="linear", entropy_frames=budget, entropy_final_fraction=0.1,
    )
    config = LearnerConfig(
        logdir=tmp_path, impala=impala, training=TrainingConfig(unroll_length=16, batch_size=8),
        stop=StopConfig(at_return=None, after_frames=budget),
    )
    assert train(config, envs=8)["frames"] == budget
    (events,) = (tmp_path / "tensorboard").glob("events.out.tfevents.*")
    scalars = _session_values(events, ("learner/learning_rate", ENTROPY_COST))
    # Each iteration trains at the schedule's value for the frames before it, logged at the frames after it.
    steps = [step for _, step, _ in scalars["learner/learning_rate"]]
    assert steps == list(range(128, budget + 1, 128))
    np.testing.assert_allclose([v for *_, v in scalars["learner/learning_rate"]], [1e-3 * (1 - (s - 128) / budget) for s in steps], rtol=1e-5)
    np.testing.assert_allclose([v for *_, v in scalars[ENTROPY_COST]], [0.01 * (1 - 0.9 * (s - 128) / budget) for s in steps], rtol=1e-5)


def test_unseeded_runs_draw_their_own_streams_and_a_seed_repeats_its_own() -> None:
    """Unseeded runs all took seed 0, and so the same env resets and action samples."""
    agent = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(8,)), seed=0)

    def first_states(seed: int | None) -> np.ndarray:
        return Anakin(CartPole(), agent, envs=4, unroll_length=3, batch_size=4, seed=seed)._state["physics"].numpy()

    assert not np.array_equal(first_states(None), first_states(None))
    np.testing.assert_array_equal(first_states(3), first_states(3))
