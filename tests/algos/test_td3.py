"""TD3: its targets and policy loss, and the agent's acting and delayed updates."""

from __future__ import annotations

import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from aioseed.action_space import Box
from aioseed.algos.td3 import loss
from aioseed.algos.td3.agent import Td3Agent
from aioseed.algos.td3.config import Td3Config
from aioseed.spec import EnvSpec
from tests.algos.fused_shares import assert_same_updates

SPEC = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=Box((2,), (-2.0, 0.0), (2.0, 1.0)))


def _batch(rng: np.random.Generator, rows: int = 64) -> dict[str, np.ndarray]:
    return {
        "observation": rng.normal(size=(2, rows, 3)).astype(np.float32),
        "action": rng.uniform(-1, 1, size=(2, rows, 2)).astype(np.float32),
        "reward": rng.normal(size=(2, rows)).astype(np.float32),
        "done": np.zeros((2, rows), bool),
        "phantom": np.zeros((2, rows), bool),
    }


def test_target_smoothing_clips_the_noise_then_the_action() -> None:
    actions = tf.constant([[0.0, 0.9, -0.2]])
    noise = tf.constant([[0.3, 0.3, -2.0]])
    np.testing.assert_allclose(loss.smoothed_actions(actions, noise, noise_clip=0.5), [[0.3, 1.0, -0.7]], rtol=1e-6)


def test_targets_take_the_smaller_q_and_stop_at_termination() -> None:
    y = loss.clipped_double_q_targets(tf.constant([1.0, 1.0]), tf.constant([0.5, 0.0]), tf.constant([4.0, 9.0]), tf.constant([6.0, 9.0]))
    np.testing.assert_allclose(y, [3.0, 1.0])
    np.testing.assert_allclose(loss.actor_loss(tf.constant([2.0, 4.0, 100.0]), tf.constant([1.0, 1.0, 0.0])), -3.0)


def test_acting_adds_clipped_noise_in_the_box_and_evaluation_rows_run_the_policy() -> None:
    agent = Td3Agent(SPEC, Td3Config(hidden_sizes=(16,), warmup_actions="policy", exploration_noise=0.1))
    observations = np.zeros((4096, 3), np.float32)
    evaluation = np.zeros(4096, bool)
    evaluation[:2] = True
    outputs, state = agent.infer(observations, {}, evaluation=evaluation)
    action, env_action = outputs["action"], outputs["env_action"]
    assert state == {} and action.shape == (4096, 2) and action.dtype == np.float32
    assert (np.abs(action) <= 1.0).all() and (env_action >= [-2.0, 0.0]).all() and (env_action <= [2.0, 1.0]).all()
    np.testing.assert_allclose(env_action, [-2.0, 0.0] + (action + 1.0) * 0.5 * np.array([4.0, 1.0]), rtol=1e-5)
    np.testing.assert_array_equal(action[0], action[1])  # the policy's action, for the same observation
    policy = action[0]
    noise = action[2:] - policy
    assert abs(noise.std() - 0.1) < 0.01 and abs(noise.mean()) < 0.01


@pytest.mark.parametrize("warmup", ["policy", "uniform"])
def test_warmup_actions_are_uniform_in_the_box_until_the_first_update(warmup: str) -> None:
    """E[a^2] is 1/3 for a uniform in [-1, 1]; the initial policy with noise 0.1 stays far below it."""
    agent = Td3Agent(SPEC, Td3Config(hidden_sizes=(8,), warmup_actions=warmup, policy_frequency=1))
    observations = np.zeros((4096, 3), np.float32)

    def second_moment() -> float:
        return float(np.mean(np.square(agent.infer(observations, {})[0]["action"])))

    before = second_moment()
    assert abs(before - 1 / 3) < 0.02 if warmup == "uniform" else before < 0.2
    agent.train_step(_batch(np.random.default_rng(0)))
    assert second_moment() < 0.2  # the policy's own noisy actions from the first update on


def test_updates_fit_the_critics_and_the_policy_climbs_the_first_critic() -> None:
    """With discount 0 the critics' targets are the rewards, which they fit; under the fitted Q1 the trained
    policy's actions are worth more than the initial policy's."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    agent = Td3Agent(SPEC, Td3Config(hidden_sizes=(32, 32), policy_frequency=1, discount=0.0, critic_learning_rate=1e-3))
    actor = agent.network.actor
    initial_policy = [w.numpy().copy() for w in actor.weights]
    batch = _batch(rng)
    first = agent.train_step(batch)
    for _ in range(150):
        last = agent.train_step(batch)
    assert last["losses/critic"] < 0.5 * first["losses/critic"]
    assert first["skipped_nonfinite"] == 0 and last["priorities"].shape == (64,)
    observations = batch["observation"][0]

    def value() -> float:
        return float(tf.reduce_mean(agent.network.critics.q1(observations, actor(observations))))

    trained = value()
    for w, initial in zip(actor.weights, initial_policy):
        w.assign(initial)
    assert trained > value() + 0.05


@pytest.mark.parametrize(("frequency", "minibatches"), [(1, 1), (2, 1), (2, 2), (3, 2)])
def test_the_policy_and_every_target_update_once_per_frequency_critic_updates(frequency: int, minibatches: int) -> None:
    """CleanRL's delays: after every ``frequency``-th critic update (the first included) one policy update and
    one Polyak step of the target policy and target critics; between them the targets do not move."""
    agent = Td3Agent(SPEC, Td3Config(hidden_sizes=(8,), policy_frequency=frequency, minibatches=minibatches, jit_compile=minibatches > 1))
    rng = np.random.default_rng(0)
    policy_steps, targets_moved = [], []
    for _ in range(6):
        before = int(agent.actor_optimizer.iterations.numpy())
        targets = [w.numpy().copy() for w in agent.target_network.weights]
        agent.train_step(_batch(rng, rows=32 * minibatches))
        policy_steps.append(int(agent.actor_optimizer.iterations.numpy()) - before)
        targets_moved.append(any(not np.array_equal(w.numpy(), t) for w, t in zip(agent.target_network.weights, targets)))
    critic_updates = [range(i * minibatches, (i + 1) * minibatches) for i in range(6)]
    expected = [sum(1 for u in updates if u % frequency == 0) for updates in critic_updates]
    assert int(agent.critic_optimizer.iterations.numpy()) == 6 * minibatches
    assert policy_steps == expected
    assert targets_moved == [steps > 0 for steps in expected]


def test_the_targets_start_as_copies_and_a_checkpoint_restores_weights_rates_and_rhythm(tmp_path) -> None:
    agent = Td3Agent(SPEC, Td3Config(hidden_sizes=(8,), policy_frequency=2))
    for online, target in zip(agent.network.weights, agent.target_network.weights, strict=True):
        np.testing.assert_array_equal(online.numpy(), target.numpy())
    rng = np.random.default_rng(0)
    for _ in range(3):  # critic updates 0, 1, 2: the policy after 0 and 2
        agent.train_step(_batch(rng))
    agent.set_learning_rate(1e-4)
    path = tf.train.Checkpoint(**agent.checkpoint_objects()).save(str(tmp_path / "ckpt"))
    restored = Td3Agent(SPEC, Td3Config(hidden_sizes=(8,), policy_frequency=2))
    tf.train.Checkpoint(**restored.checkpoint_objects()).restore(path).assert_existing_objects_matched()
    restored.set_progress(0)
    for saved, loaded in zip(agent.target_network.weights + agent.network.weights, restored.target_network.weights + restored.network.weights):
        np.testing.assert_array_equal(saved.numpy(), loaded.numpy())
    assert restored.learning_rate == pytest.approx(1e-4) and restored.current_learning_rate == pytest.approx(1e-4)
    assert float(restored.critic_optimizer.learning_rate.numpy()) == pytest.approx(1e-4)  # the critics' 3e-4 x 1/3
    actor_steps = int(restored.actor_optimizer.iterations.numpy())
    restored.train_step(_batch(rng))  # critic update 3: no policy update due (the first step's metrics aside)
    restored.train_step(_batch(rng))  # critic update 4: due
    assert int(restored.actor_optimizer.iterations.numpy()) - actor_steps == 2


def test_a_diverging_critic_skips_its_update_and_keeps_its_weights() -> None:
    agent = Td3Agent(SPEC, Td3Config(hidden_sizes=(16,), policy_frequency=2))
    batch = _batch(np.random.default_rng(1))
    batch["reward"][1, 0] = np.inf
    weights = [w.numpy().copy() for w in agent.network.critics.trainable_variables]
    updates: list[int] = []
    metrics = agent.train_step(batch, on_update=lambda: updates.append(1))
    assert metrics["skipped_nonfinite"] == 1
    for w, kept in zip(agent.network.critics.trainable_variables, weights):
        np.testing.assert_array_equal(w.numpy(), kept)
    assert updates == [1]  # the policy's update still ran (its loss reads no rewards): the policy that acts changed


def test_td3_needs_a_box() -> None:
    with pytest.raises(ValueError, match="TD3 acts in a Box action space; this env has 3 actions"):
        Td3Agent(EnvSpec((3,), "float32", 3), Td3Config())
    with pytest.raises(ValueError, match="noise_clip must be >= 0"):
        Td3Config(noise_clip=-0.1)


def test_the_fused_call_makes_the_updates_one_minibatch_per_call_makes_share_by_share() -> None:
    """4 minibatches in one compiled call against 4 calls of one on the same shares in order, from the same
    weights: the same critics, policy and targets (no target smoothing noise, so both compute alike)."""
    config = Td3Config(hidden_sizes=(8,), policy_frequency=2, policy_noise=0.0, tau=0.5)  # targets that move well beyond the tolerance
    fused = Td3Agent(SPEC, dataclasses.replace(config, minibatches=4, jit_compile=True))
    one_at_a_time = Td3Agent(SPEC, config)

    def variables(agent: Td3Agent) -> list[tf.Variable]:
        return [*agent.network.weights, *agent.target_network.weights]

    rng = np.random.default_rng(3)
    assert_same_updates(fused, one_at_a_time, variables, [_batch(rng, rows=4 * 16) for _ in range(2)], shares=4)
    assert int(fused.actor_optimizer.iterations.numpy()) == 4  # after critic updates 0, 2, 4 and 6
