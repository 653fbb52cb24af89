"""PPO-style sample reuse: epochs x minibatches updates per batch, counted as parameter versions, and learning."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.server.training.trainer import Trainer, TrainingConfig
from aioseed.server.trajectories.source import UnrollQueue
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(3,), observation_dtype="float32", action_space=2)
T, B = 5, 6


def bandit_batch(rng: np.random.Generator, agent: ImpalaAgent, version: int = 0) -> dict[str, np.ndarray]:
    """A contextual bandit as unrolls: the sign of the first feature says which action pays 1 (else -1)."""
    observations = rng.normal(size=(T + 1, B, 3)).astype(np.float32)
    out, _ = agent.infer(observations.reshape(-1, 3), {})
    actions = out["action"].reshape(T + 1, B)
    correct = (observations[..., 0] > 0).astype(np.int32)
    rewards = np.zeros((T + 1, B), np.float32)
    rewards[1:] = np.where(actions[:-1] == correct[:-1], 1.0, -1.0)
    behaviour_value = {"value": out["value"].reshape(T + 1, B)} if "value" in out else {}
    return {
        **behaviour_value,
        "observation": observations,
        "action": actions,
        "logits": out["logits"].reshape(T + 1, B, 2),
        "reward": rewards,
        "done": np.ones((T + 1, B), bool),  # every step is an episode of its own
        "phantom": np.zeros((T + 1, B), bool),
        "version": np.full((T + 1, B), version, np.int64),
        "slot": np.arange(B),
    }


def accuracy(agent: ImpalaAgent, rng: np.random.Generator) -> float:
    observations = rng.normal(size=(512, 3)).astype(np.float32)
    out = agent.policy.greedy(observations)
    return float(np.mean(out["action"].numpy() == (observations[:, 0] > 0)))


def test_a_batch_is_epochs_times_minibatches_updates_and_versions() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(epochs=2, minibatches=3, ppo_clip=0.2), seed=0)
    rng = np.random.default_rng(0)
    before = [v.numpy().copy() for v in agent.network.trainable_variables]
    trainer = Trainer(TrainingConfig(), agent, UnrollQueue(asyncio.Queue(), 1), lambda *_: None)
    metrics, lag = trainer._step(bandit_batch(rng, agent))
    assert trainer.version == 6  # 2 epochs x 3 minibatches
    assert lag == 2.5  # data from version 0, updated at versions 0..5: the lag counted per update
    assert metrics["learner/policy_lag_max"] == 5.0
    assert {"losses/pg", "losses/clip_fraction", "losses/approx_kl", "losses/grad_norm"} <= metrics.keys()
    assert "updates" not in metrics
    assert int(agent.optimizer.iterations.numpy()) == 6
    assert any(np.abs(a - b.numpy()).max() > 0 for a, b in zip(before, agent.network.trainable_variables))
    metrics, lag = trainer._step(bandit_batch(rng, agent, version=0))
    assert lag == 8.5 and metrics["learner/policy_lag_max"] == 11.0  # updates 6..11 on data from version 0


@pytest.mark.parametrize(
    "config",
    [
        ImpalaConfig(epochs=3, minibatches=2, ppo_clip=0.2, normalize_advantages=True, learning_rate=3e-3),
        ImpalaConfig(epochs=3, minibatches=2, ppo_clip=0.2, targets="gae", lambda_=0.95, learning_rate=3e-3),
        ImpalaConfig(normalize_advantages=True, learning_rate=3e-3),  # one pass, normalized
        ImpalaConfig(epochs=3, minibatches=2, ppo_clip=0.2, minibatch="transitions", normalize_advantages=True, learning_rate=3e-3),
        ImpalaConfig(
            epochs=3, minibatches=2, ppo_clip=0.2, minibatch="transitions", targets="gae", proximal="behaviour",
            normalize_advantages=True, learning_rate=3e-3,
        ),
    ],
    ids=["ppo-vtrace", "ppo-gae", "one-pass-normalized", "ppo-transitions", "ppo-behaviour-proximal"],
)
def test_each_training_mode_learns_the_bandit(config: ImpalaConfig) -> None:
    agent = ImpalaAgent(SPEC, config, seed=1)
    rng = np.random.default_rng(1)
    start = accuracy(agent, rng)
    for _ in range(60):
        agent.train_step(bandit_batch(rng, agent))
    final = accuracy(agent, rng)
    assert final >= 0.95 and final > start


def test_transition_minibatches_cover_the_batch_once_per_epoch_across_unrolls_and_steps() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(epochs=2, minibatches=3, ppo_clip=0.2, minibatch="transitions"), seed=0)
    seen: list[np.ndarray] = []
    update = agent._update_transitions

    def record(inputs: dict) -> dict:
        seen.append(np.asarray(inputs["observation"])[..., 2].copy())  # [1, b]: each transition's id
        return update(inputs)

    agent._update_transitions = record
    batch = bandit_batch(np.random.default_rng(0), agent)
    ids = np.arange((T + 1) * B, dtype=np.float32).reshape(T + 1, B)
    batch["observation"][..., 2] = ids
    applied: list[None] = []
    agent.train_step(batch, lambda: applied.append(None))
    assert len(seen) == 6 and len(applied) == 6 and all(part.shape == (1, T * B // 3) for part in seen)
    for epoch in (seen[:3], seen[3:]):  # every one of the T x B transitions once, the bootstrap row never
        assert sorted(np.concatenate(epoch, axis=1)[0].tolist()) == sorted(ids[:-1].ravel().tolist())
    first = seen[0][0].astype(int)
    assert len(set(first // B)) > 1 and len(set(first % B)) > 1  # mixed steps and unrolls
    assert seen[0][0].tolist() != seen[3][0].tolist()  # reshuffled each epoch


def test_transition_minibatches_need_a_feedforward_network() -> None:
    with pytest.raises(ValueError, match="feedforward"):
        ImpalaConfig(minibatch="transitions", lstm_size=8)
    with pytest.raises(ValueError, match="feedforward"):
        ImpalaConfig(minibatch="transitions", previous_action_reward=True)


@pytest.mark.parametrize("targets", ["gae", "vtrace"])
def test_a_behaviour_proximal_takes_the_stored_logits_and_values_and_runs_no_network_pass(targets: str) -> None:
    config = ImpalaConfig(epochs=2, minibatches=2, ppo_clip=0.2, targets=targets, lambda_=0.9, proximal="behaviour")
    agent = ImpalaAgent(SPEC, config, seed=0)
    assert agent.output_columns()["value"] == ((), np.float32)
    batch = bandit_batch(np.random.default_rng(0), agent)
    assert batch["value"].shape == (T + 1, B)  # inference gave each step's value
    batch["done"][:] = False  # one long episode per unroll: every value is bootstrapped from
    batch["logits"] = batch["logits"] + np.random.default_rng(1).normal(size=batch["logits"].shape).astype(np.float32)
    batch["value"] = np.random.default_rng(2).normal(size=(T + 1, B)).astype(np.float32) * 5
    calls: list[None] = []
    unroll = agent._unroll
    agent._unroll = lambda *args: calls.append(None) or unroll(*args)  # traced: counts passes in the targets' graph
    rows, _ = agent._targets(dict(batch))
    assert not calls
    logits, actions = batch["logits"][:-1], batch["action"][:-1]
    expected = tf.nn.log_softmax(logits).numpy()[np.arange(T)[:, None], np.arange(B), actions]
    np.testing.assert_allclose(rows["log_probs"].numpy(), expected, rtol=1e-5, atol=1e-5)
    # With the behaviour as the proximal policy every importance weight is 1, so V-trace is GAE on the stored values.
    rewards, values, discount = batch["reward"], batch["value"], config.discount
    advantages = np.zeros((T, B), np.float32)
    running = np.zeros(B, np.float32)
    for t in reversed(range(T)):
        delta = rewards[t + 1] + discount * values[t + 1] - values[t]
        running = delta + discount * config.lambda_ * running
        advantages[t] = running
    returns = advantages + values[:-1]
    np.testing.assert_allclose(rows["value_targets"].numpy(), returns, rtol=1e-4, atol=1e-4)
    if targets == "gae":
        np.testing.assert_allclose(rows["advantages"].numpy(), advantages, rtol=1e-4, atol=1e-4)


def test_network_proximal_recomputes_and_stores_no_value() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(epochs=2, minibatches=2, ppo_clip=0.2, targets="gae"), seed=0)
    assert "value" not in agent.output_columns()
    batch = bandit_batch(np.random.default_rng(0), agent)
    assert "value" not in batch
    batch["logits"] = batch["logits"] + 3.0 * np.random.default_rng(1).normal(size=batch["logits"].shape).astype(np.float32)
    rows, _ = agent._targets(dict(batch))
    logits, _ = agent._unroll(batch, tf.constant(batch["reward"]))
    expected = tf.nn.log_softmax(logits[:-1]).numpy()[np.arange(T)[:, None], np.arange(B), batch["action"][:-1]]
    np.testing.assert_allclose(rows["log_probs"].numpy(), expected, rtol=1e-4, atol=1e-4)


def test_a_behaviour_proximal_needs_sample_reuse() -> None:
    with pytest.raises(ValueError, match="proximal behaviour needs sample reuse"):
        ImpalaConfig(proximal="behaviour")
