"""Optimizer choice, the learning-rate and entropy-cost schedules, and how the console's rate combines with them."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from aioseed.algos.impala.agent import ENTROPY_COST, ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.schedule import kl_adapted_rate, schedule_factor
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(4,), observation_dtype="float32", action_space=2)


def test_schedule_factors() -> None:
    assert [schedule_factor("constant", f) for f in (0.0, 0.5, 2.0)] == [1.0, 1.0, 1.0]
    assert [schedule_factor("linear", f) for f in (0.0, 0.25, 1.0, 3.0)] == [1.0, 0.75, 0.0, 0.0]
    assert schedule_factor("linear", 0.5, final_fraction=0.2) == pytest.approx(0.6)
    assert schedule_factor("cosine", 0.0) == pytest.approx(1.0)
    assert schedule_factor("cosine", 0.5) == pytest.approx(0.5)
    assert schedule_factor("cosine", 1.0, final_fraction=0.1) == pytest.approx(0.1)
    assert schedule_factor("cosine", 0.25) > schedule_factor("linear", 0.25)  # cosine decays slowly at first
    with pytest.raises(ValueError, match="unknown schedule"):
        schedule_factor("step", 0.5)  # type: ignore[arg-type]


def test_the_schedule_scales_the_base_rate_the_console_sets() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(learning_rate=1e-3, lr_schedule="linear", lr_frames=1000))
    assert agent.current_learning_rate == pytest.approx(1e-3)
    agent.set_progress(250)
    assert (agent.learning_rate, agent.current_learning_rate) == pytest.approx((1e-3, 7.5e-4))
    agent.set_learning_rate(2e-3)  # the console changes the base; the schedule still applies
    assert (agent.learning_rate, agent.current_learning_rate) == pytest.approx((2e-3, 1.5e-3))
    agent.set_progress(2000)  # past the budget the rate stays at the end value
    assert agent.current_learning_rate == pytest.approx(0.0)


def test_a_constant_schedule_keeps_the_rate() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(learning_rate=3e-4))
    agent.set_progress(10**9)
    assert agent.current_learning_rate == pytest.approx(3e-4)


def _batch(rng: np.random.Generator, steps: int = 9, size: int = 8) -> dict[str, np.ndarray]:
    shape = (steps, size)
    return {
        "observation": rng.normal(size=(*shape, 4)).astype(np.float32),
        "action": rng.integers(0, 2, shape, dtype=np.int32),
        "logits": rng.normal(size=(*shape, 2)).astype(np.float32),
        "reward": rng.normal(size=shape).astype(np.float32),
        "done": rng.random(shape) < 0.1,
        "phantom": np.zeros(shape, bool),
    }


@pytest.mark.parametrize(
    "reuse",
    [{}, {"epochs": 2, "minibatches": 2, "ppo_clip": 0.2, "targets": "gae", "minibatch": "transitions"}],
    ids=["one_pass", "ppo_transitions"],
)
def test_the_entropy_cost_follows_its_schedule_into_the_compiled_loss(reuse: dict) -> None:
    # Rate 0 freezes the network, so each step sees the same losses; only the entropy cost moves.
    config = ImpalaConfig(
        learning_rate=0.0, entropy_cost=0.01, entropy_schedule="linear", entropy_frames=1000, entropy_final_fraction=0.1, **reuse
    )
    agent, batch = ImpalaAgent(SPEC, config), _batch(np.random.default_rng(0))
    for frames, cost in ((0, 0.01), (500, 0.0055), (5000, 0.001)):  # past the budget it stays at the end value
        agent.set_progress(frames)
        metrics = agent.train_step(batch)
        assert metrics[ENTROPY_COST] == pytest.approx(cost)
        # After the first trace the total still weighs the entropy by the cost in effect, not a traced constant.
        expected = metrics["losses/pg"] + config.baseline_cost * metrics["losses/baseline"] + cost * metrics["losses/entropy"]
        assert metrics["losses/total"] == pytest.approx(expected, rel=1e-4, abs=1e-6)


def test_optimizer_choice_and_its_settings() -> None:
    rmsprop = ImpalaAgent(SPEC, ImpalaConfig(optimizer="rmsprop", rmsprop_decay=0.9, rmsprop_epsilon=0.02, rmsprop_momentum=0.1))
    assert isinstance(rmsprop.optimizer, keras.optimizers.RMSprop)
    assert (rmsprop.optimizer.rho, rmsprop.optimizer.epsilon, rmsprop.optimizer.momentum) == (0.9, 0.02, 0.1)
    adam = ImpalaAgent(SPEC, ImpalaConfig(adam_beta1=0.0, adam_beta2=0.99, adam_epsilon=3e-7))
    assert isinstance(adam.optimizer, keras.optimizers.Adam)
    assert (adam.optimizer.beta_1, adam.optimizer.beta_2, adam.optimizer.epsilon) == (0.0, 0.99, 3e-7)


def test_config_refuses_schedules_without_a_budget_and_bad_reuse_settings() -> None:
    with pytest.raises(ValueError, match="lr_frames"):
        ImpalaConfig(lr_schedule="cosine")
    with pytest.raises(ValueError, match="entropy_frames"):
        ImpalaConfig(entropy_schedule="linear")
    with pytest.raises(ValueError, match="entropy_final_fraction"):
        ImpalaConfig(entropy_schedule="linear", entropy_frames=10, entropy_final_fraction=2.0)
    with pytest.raises(ValueError, match="epochs and minibatches"):
        ImpalaConfig(minibatches=0)
    with pytest.raises(ValueError, match="ppo_clip"):
        ImpalaConfig(ppo_clip=1.5)
    assert not ImpalaConfig().reuses_samples and ImpalaConfig(epochs=2).reuses_samples


def test_the_base_rate_is_checkpointed(tmp_path) -> None:
    import tensorflow as tf

    agent = ImpalaAgent(SPEC, ImpalaConfig(learning_rate=1e-3, lr_schedule="linear", lr_frames=100))
    agent.set_learning_rate(5e-4)
    checkpoint = tf.train.Checkpoint(**agent.checkpoint_objects())
    saved = checkpoint.write(str(tmp_path / "ckpt"))
    restored = ImpalaAgent(SPEC, ImpalaConfig(learning_rate=1e-3, lr_schedule="linear", lr_frames=100))
    tf.train.Checkpoint(**restored.checkpoint_objects()).read(saved).assert_existing_objects_matched()
    restored.set_progress(50)
    assert np.isclose(restored.current_learning_rate, 2.5e-4)


def test_the_kl_adapted_rate_follows_rl_games_rule() -> None:
    assert kl_adapted_rate(1e-3, kl=0.001, target_kl=0.01) == pytest.approx(1.5e-3)  # under half: up
    assert kl_adapted_rate(1e-3, kl=0.021, target_kl=0.01) == pytest.approx(1e-3 / 1.5)  # over twice: down
    assert kl_adapted_rate(1e-3, kl=0.005, target_kl=0.01) == 1e-3  # within [half, twice]: kept
    assert kl_adapted_rate(1e-3, kl=0.02, target_kl=0.01) == 1e-3
    assert kl_adapted_rate(9e-3, kl=0.0, target_kl=0.01) == 1e-2  # bounded above
    assert kl_adapted_rate(1.2e-6, kl=1.0, target_kl=0.01) == 1e-6  # and below
    assert kl_adapted_rate(1e-3, kl=float("nan"), target_kl=0.01) == 1e-3


def test_target_kl_moves_the_rate_per_update_on_top_of_the_schedule_and_is_checkpointed() -> None:
    """Rate 1e-5 barely moves the policy, so every update's KL is far under half the target: each of the 2 x 2
    updates raises the rate in effect by 1.5; the schedule and the console's base rate still scale it."""
    reuse = {"epochs": 2, "minibatches": 2, "ppo_clip": 0.2, "targets": "gae", "minibatch": "transitions"}
    config = ImpalaConfig(learning_rate=1e-5, lr_schedule="linear", lr_frames=1000, target_kl=0.01, **reuse)
    agent = ImpalaAgent(SPEC, config)
    agent.set_progress(500)
    agent.train_step(_batch(np.random.default_rng(0)))
    assert agent.current_learning_rate == pytest.approx(1e-5 * 0.5 * 1.5**4, rel=1e-4)
    agent.set_learning_rate(2e-5)  # the console's base doubles what is in effect
    assert agent.current_learning_rate == pytest.approx(2e-5 * 0.5 * 1.5**4, rel=1e-4)
    assert agent.checkpoint_objects()["kl_factor"] is agent.kl_factor
    assert "kl_factor" not in ImpalaAgent(SPEC, ImpalaConfig(**reuse)).checkpoint_objects()  # old checkpoints keep their shape
    untargeted = ImpalaAgent(SPEC, ImpalaConfig(learning_rate=1e-5, **reuse))
    untargeted.train_step(_batch(np.random.default_rng(0)))
    assert untargeted.current_learning_rate == pytest.approx(1e-5)
    with pytest.raises(ValueError, match="target_kl must be positive and needs sample reuse"):
        ImpalaConfig(target_kl=0.01)
