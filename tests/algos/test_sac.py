"""SAC: the losses on SEED's unroll layout, and the agent's inference and updates."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from aioseed.action_space import Box
from aioseed.algos.sac import loss
from aioseed.algos.sac.agent import SacAgent
from aioseed.algos.sac.config import SacConfig
from aioseed.spec import EnvSpec
from tests.algos.fused_shares import assert_same_updates

SPEC = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=Box((2,), (-2.0, 0.0), (2.0, 1.0)))


def test_transitions_read_the_unroll_layout_with_truncation_and_termination() -> None:
    """Env A: step 1 ends by termination (SEED's convention: the row carries the next episode's first
    observation, done). Env B: step 1 is a truncated episode's final observation (phantom, not done), step 2
    the next episode's first (done)."""
    observation = np.arange(6, dtype=np.float32).reshape(3, 2, 1)
    done = np.array([[0, 0], [1, 0], [0, 1]], bool)
    phantom = np.array([[0, 0], [0, 1], [0, 0]], bool)
    reward = np.array([[0, 0], [1, 2], [3, 0]], np.float32)
    action = np.zeros((3, 2, 1), np.float32)
    data = loss.transitions(observation, action, reward, done, phantom, discount=0.9)
    np.testing.assert_allclose(data.discount, [0.0, 0.9, 0.9, 0.0])  # A's termination; B bootstraps from its final obs
    np.testing.assert_allclose(data.valid, [1, 1, 1, 0])  # B's phantom step never acted
    np.testing.assert_allclose(data.reward, [1, 2, 3, 0])
    np.testing.assert_allclose(data.next_observation[:, 0], [2, 3, 4, 5])


def test_soft_targets_take_the_smaller_q_minus_the_entropy_term() -> None:
    y = loss.soft_targets(
        reward=tf.constant([1.0, 1.0]), discount=tf.constant([0.5, 0.0]), next_q1=tf.constant([4.0, 9.0]),
        next_q2=tf.constant([6.0, 9.0]), next_log_prob=tf.constant([-2.0, 0.0]), alpha=tf.constant(0.5),
    )
    np.testing.assert_allclose(y, [1.0 + 0.5 * (4.0 + 1.0), 1.0])


def test_the_temperature_rises_below_the_target_entropy_and_falls_above() -> None:
    log_alpha = tf.Variable(0.0)
    for log_prob, sign in ((3.0, 1.0), (-3.0, -1.0)):  # entropy -3 < target -1: alpha must rise
        with tf.GradientTape() as tape:
            value = loss.temperature_loss(log_alpha, tf.constant([log_prob]), target_entropy=-1.0, valid=tf.constant([1.0]))
        assert np.sign(-tape.gradient(value, log_alpha).numpy()) == sign


def _batch(rng: np.random.Generator, rows: int = 64) -> dict[str, np.ndarray]:
    return {
        "observation": rng.normal(size=(2, rows, 3)).astype(np.float32),
        "action": rng.normal(size=(2, rows, 2)).astype(np.float32),
        "reward": rng.normal(size=(2, rows)).astype(np.float32),
        "done": np.zeros((2, rows), bool),
        "phantom": np.zeros((2, rows), bool),
    }


def test_the_agent_samples_inside_the_box_and_evaluation_rows_take_the_mean() -> None:
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(16,)))
    observations = np.zeros((4, 3), np.float32)
    outputs, state = agent.infer(observations, {}, evaluation=np.array([True, True, False, False]))
    assert state == {} and outputs["action"].shape == (4, 2)
    env_action = outputs["env_action"]
    assert (env_action >= [-2.0, 0.0]).all() and (env_action <= [2.0, 1.0]).all()
    np.testing.assert_array_equal(outputs["action"][0], outputs["action"][1])  # the mean, for the same observation
    assert not np.array_equal(outputs["action"][2], outputs["action"][3])  # sampled


def test_updates_fit_the_critics_and_move_the_targets_by_polyak() -> None:
    rng = np.random.default_rng(0)
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(32, 32), tau=0.01))
    batch = _batch(rng)
    before = [w.numpy().copy() for w in agent.target_network.weights]
    first = agent.train_step(batch)
    for _ in range(150):
        last = agent.train_step(batch)
    assert last["losses/critic"] < 0.5 * first["losses/critic"]
    assert first["skipped_nonfinite"] == 0 and last["priorities"].shape == (64,)
    assert last["sac/alpha"] < 1.0  # the temperature moved
    moved = [np.abs(w.numpy() - b).max() for w, b in zip(agent.target_network.weights, before)]
    assert max(moved) > 0


def test_a_diverging_critic_skips_its_update_and_keeps_its_weights() -> None:
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(16,)))
    batch = _batch(np.random.default_rng(1))
    batch["reward"][1, 0] = np.inf
    weights = [w.numpy().copy() for w in agent.network.critics.trainable_variables]
    metrics = agent.train_step(batch)
    assert metrics["skipped_nonfinite"] == 1
    for w, kept in zip(agent.network.critics.trainable_variables, weights):
        np.testing.assert_array_equal(w.numpy(), kept)


def test_a_skipped_critic_update_keeps_the_policys_rhythm_and_a_policy_update_counts_as_one() -> None:
    """Frequency 2: the policy updates twice after critic updates 0 and 2, whether or not critic update 0 was
    skipped; the policy that acts changed at update 0, so it is a new version although the critics' was skipped."""
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(8,), policy_frequency=2))
    rng = np.random.default_rng(0)
    diverging = _batch(rng)
    diverging["reward"][1, 0] = np.inf  # the critics' targets only: the policy's loss never reads rewards
    versions, policy_steps = [], []
    for batch in (diverging, _batch(rng), _batch(rng), _batch(rng)):
        before, updates = int(agent.actor_optimizer.iterations.numpy()), []
        metrics = agent.train_step(batch, on_update=lambda: updates.append(1))
        policy_steps.append(int(agent.actor_optimizer.iterations.numpy()) - before)
        versions.append(len(updates))
    assert metrics["skipped_nonfinite"] == 0 and int(agent.critic_optimizer.iterations.numpy()) == 3
    assert policy_steps == [2, 0, 2, 0]  # before: [2, 2, 0, 2], the delayed update repeated at once
    assert versions == [1, 1, 1, 1]  # before: [0, 1, 1, 1]


def test_sac_needs_a_box() -> None:
    with pytest.raises(ValueError, match="SAC acts in a Box action space; this env has 3 actions"):
        SacAgent(EnvSpec((3,), "float32", 3), SacConfig())


@pytest.mark.parametrize("frequency", [1, 2, 3])
def test_the_policy_updates_frequency_times_every_frequency_th_critic_update(frequency: int) -> None:
    """CleanRL's delayed updates: over 6 critic updates the policy and the temperature update 6 times too,
    in bursts of ``frequency`` after every ``frequency``-th critic update (the first included)."""
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(8,), policy_frequency=frequency))
    batch = _batch(np.random.default_rng(0))
    policy_steps = []
    for _ in range(6):
        before = int(agent.actor_optimizer.iterations.numpy())
        assert int(agent.alpha_optimizer.iterations.numpy()) == before
        metrics = agent.train_step(batch)
        policy_steps.append(int(agent.actor_optimizer.iterations.numpy()) - before)
        assert np.isfinite(metrics["losses/actor"]) and np.isfinite(metrics["policy/entropy"])
    assert int(agent.critic_optimizer.iterations.numpy()) == 6
    assert policy_steps == ([frequency] + [0] * (frequency - 1)) * (6 // frequency)


def test_cleanrl_log_std_is_squashed_into_its_bounds_from_mid_range() -> None:
    from aioseed.action_space import LOG_STD_MAX, LOG_STD_MIN
    from aioseed.algos.networks import GaussianHead

    head = GaussianHead(2, state_dependent=True, squash_log_std=True)
    x = tf.Variable(np.array([[0.0] * 4, [1e4] * 4, [-1e4] * 4], np.float32))
    with tf.GradientTape() as tape:
        log_std = head(x)[:, 2:]
        first = tf.reduce_sum(log_std[0])
    assert np.allclose(log_std[0], LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN))  # starts mid-range: std ~0.22
    assert (log_std >= LOG_STD_MIN).numpy().all() and (log_std <= LOG_STD_MAX).numpy().all()
    assert np.abs(tape.gradient(first, x).numpy()[0]).sum() > 0


def test_the_log_prob_epsilon_caps_what_a_saturated_action_costs() -> None:
    from aioseed.algos import tanh_gaussian

    u, low, high = tf.constant([[0.3, 20.0]]), tf.constant([-1.0, -1.0]), tf.constant([1.0, 1.0])
    exact = tanh_gaussian.log_det_jacobian(u, low, high)
    capped = tanh_gaussian.log_det_jacobian(u, low, high, epsilon=1e-6)
    expected = np.log(1 - np.tanh(0.3) ** 2 + 1e-6) + np.log(1e-6)  # tanh(20) is 1 in float32
    np.testing.assert_allclose(capped, [expected], rtol=1e-5)
    assert exact.numpy()[0] < -38.0 < capped.numpy()[0]  # exact: 2 (log 2 - 20 - ...) for the saturated dimension


@pytest.mark.parametrize("warmup", ["policy", "uniform"])
def test_warmup_actions_are_uniform_in_the_box_until_the_first_update(warmup: str) -> None:
    """E[a^2] is 1/3 for a uniform in [-1, 1] and ~0.394 for tanh of a unit Gaussian (the initial policy on zero
    observations); 8,192 samples put either 20 standard errors away from the other."""
    spec = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=Box((2,), (-1.0, -1.0), (1.0, 1.0)))
    agent = SacAgent(spec, SacConfig(hidden_sizes=(8,), warmup_actions=warmup, policy_frequency=1))
    observations = np.zeros((4096, 3), np.float32)

    def second_moment() -> float:
        outputs, _ = agent.infer(observations, {})
        assert np.isfinite(outputs["action"]).all()
        return float(np.mean(np.square(outputs["env_action"])))

    before = second_moment()
    assert abs(before - 1 / 3) < 0.02 if warmup == "uniform" else before > 0.37
    agent.train_step(_batch(np.random.default_rng(0)))
    assert second_moment() > 0.36  # the policy's own samples from the first update on


def test_a_skipped_temperature_update_is_counted_and_keeps_alpha(monkeypatch) -> None:
    from aioseed.algos.sac import loss

    monkeypatch.setattr(loss, "temperature_loss", lambda log_alpha, *rest: log_alpha * np.inf)  # patched before tracing
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(8,)))
    log_alpha, updates = float(agent.log_alpha.numpy()), []
    diverging = _batch(np.random.default_rng(0))
    diverging["reward"][1, 0] = np.inf  # the critics' update is skipped too; the policy's loss reads no rewards
    metrics = agent.train_step(diverging, on_update=lambda: updates.append(1))
    assert metrics["skipped_nonfinite"] == 1 and float(agent.log_alpha.numpy()) == log_alpha
    # the policy that acts changed: a new version (it was held back), or acting would wait on a stale one
    assert updates == [1] and int(agent.actor_optimizer.iterations.numpy()) == agent.config.policy_frequency


def test_critic_layer_norm_normalises_each_hidden_layer_of_both_critics_and_their_targets() -> None:
    """Features 100x larger than usual reach every critic's activations at unit scale, and the critics still fit;
    the policy keeps plain layers."""
    rng = np.random.default_rng(3)
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(32, 32), critic_layer_norm=True))
    observations, actions = 100.0 * rng.normal(size=(64, 3)).astype(np.float32), np.zeros((64, 2), np.float32)
    for critics in (agent.network.critics, agent.target_network):
        for q in (critics.q1, critics.q2):
            dense, norm = q.torso.layers[:2]  # then the activation, and the same for the second hidden layer
            assert [type(layer).__name__ for layer in q.torso.layers].count("LayerNormalization") == 2
            normalised = norm(dense(np.concatenate([observations, actions], -1))).numpy()
            np.testing.assert_allclose(np.std(normalised, axis=-1), 1.0, rtol=1e-2)
    assert "LayerNormalization" not in [type(layer).__name__ for layer in agent.network.actor.torso.layers]
    batch = _batch(rng)
    first = agent.train_step(batch)
    for _ in range(150):
        last = agent.train_step(batch)
    assert last["losses/critic"] < 0.5 * first["losses/critic"]


def test_minibatches_run_every_update_of_a_step_in_one_call_with_the_delayed_rhythm_kept() -> None:
    """3 minibatches a step at frequency 2: critic updates 0-2 then 3-5, the policy twice after 0, 2 and 4; a
    share whose targets diverge skips its critic update alone, and each update that changed something is a version."""
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(8,), policy_frequency=2, minibatches=3))
    rng = np.random.default_rng(0)
    batches = [_batch(rng, rows=66), _batch(rng, rows=66)]
    batches[1]["reward"][1, 30] = np.inf  # row 30 of 66: the second share (rows 22-43)
    policy_steps, versions, skipped = [], [], []
    for batch in batches:
        before, updates = int(agent.actor_optimizer.iterations.numpy()), []
        metrics = agent.train_step(batch, on_update=lambda: updates.append(1))
        policy_steps.append(int(agent.actor_optimizer.iterations.numpy()) - before)
        versions.append(len(updates))
        skipped.append(metrics["skipped_nonfinite"])
        assert np.isfinite(metrics["losses/actor"])
    assert policy_steps == [4, 2] and skipped == [0, 1]
    assert int(agent.critic_optimizer.iterations.numpy()) == 5  # 6 tried, the diverging share's skipped
    assert versions == [3, 3]  # the skipped critic update was at step 4, which the policy's delayed updates followed


def test_the_separate_path_keeps_the_same_rhythm() -> None:
    agent = SacAgent(SPEC, SacConfig(hidden_sizes=(8,), policy_frequency=2, update="separate"))
    batch = _batch(np.random.default_rng(0))
    steps = []
    for _ in range(4):
        before = int(agent.actor_optimizer.iterations.numpy())
        agent.train_step(batch)
        steps.append(int(agent.actor_optimizer.iterations.numpy()) - before)
    assert steps == [2, 0, 2, 0]


def test_minibatches_need_the_fused_update() -> None:
    with pytest.raises(ValueError, match="above 1 only with update fused"):
        SacConfig(minibatches=2, update="separate")


@pytest.mark.parametrize("jit_compile", [False, True])
def test_the_fused_call_makes_the_updates_the_separate_path_makes_one_share_at_a_time(jit_compile: bool) -> None:
    """4 minibatches in one fused call against the separate path's 4 calls on the same shares in order, from the
    same weights: the same critics, policy, targets and temperature. Sampling takes the mean so both draw alike."""

    def deterministic(agent: SacAgent) -> SacAgent:
        def sample(observations: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
            params = agent.network.actor(observations)
            u = agent.distribution.mode(params)
            return u, agent.distribution.log_prob(params, u)

        agent._sample = sample  # before the first trace, so both paths' graphs take it
        return agent

    config = SacConfig(hidden_sizes=(8,), policy_frequency=2, tau=0.5)  # targets that move well beyond the tolerance
    fused = deterministic(SacAgent(SPEC, dataclasses.replace(config, minibatches=4, jit_compile=jit_compile)))
    separate = deterministic(SacAgent(SPEC, dataclasses.replace(config, update="separate")))

    def variables(agent: SacAgent) -> list[tf.Variable]:
        return [*agent.network.weights, *agent.target_network.weights, agent.log_alpha]

    rng = np.random.default_rng(3)
    assert_same_updates(fused, separate, variables, [_batch(rng, rows=4 * 16) for _ in range(2)], shares=4)
    assert int(fused.actor_optimizer.iterations.numpy()) == 8  # 2 policy updates after critic updates 0, 2, 4 and 6
    assert not np.allclose(fused.log_alpha.numpy(), np.log(config.initial_alpha))  # the temperature did train
