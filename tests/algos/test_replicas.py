"""Data-parallel training on two logical CPU devices (conftest splits the CPU): the same update as
one device within float tolerance, checkpoints that move between one and two devices, and
round-robin inference devices."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
import tensorflow as tf

from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.r2d2.agent import R2D2Agent
from aioseed.algos.r2d2.config import R2D2Config
from aioseed.algos.replicas import Replicas
from aioseed.server.training.checkpoint import Checkpointer
from aioseed.server.training.trainer import Progress
from aioseed.spec import EnvSpec

SPEC = EnvSpec(observation_shape=(4,), observation_dtype="float32", action_space=3)
ONE, TWO = ("/CPU:0",), ("/CPU:0", "/CPU:1")
T, B = 6, 8
ADAM_EPSILON = 1e-4
"""Adam moves a weight by ~lr whatever its gradient once |gradient| >> epsilon, so with the default 1e-7 a
gradient that is float noise (~1e-6, summed in another order on two devices) became a different update
of ~lr (one bias element 5e-6 apart after 3 steps at lr 1e-2, in one suite run of many). At 1e-4 such
gradients move their weights in proportion, and noise stays noise; real gradients still move ~lr."""


def impala_batch(rng: np.random.Generator, lstm_size: int = 0) -> dict[str, np.ndarray]:
    shape = (T + 1, B)
    batch = {
        "observation": rng.normal(size=(*shape, 4)).astype(np.float32),
        "action": rng.integers(0, 3, shape, dtype=np.int32),
        "logits": rng.normal(size=(*shape, 3)).astype(np.float32),
        "reward": rng.normal(scale=2.0, size=shape).astype(np.float32),
        "done": rng.random(shape) < 0.1,
        "phantom": np.zeros(shape, bool),
    }
    if lstm_size:
        batch.update({name: rng.normal(size=(B, lstm_size)).astype(np.float32) for name in ("core_h", "core_c")})
    return batch


def copy_weights(source: list[tf.Variable], target: list[tf.Variable]) -> None:
    for s, t in zip(source, target, strict=True):
        t.assign(s)


def assert_same_weights(a: list[tf.Variable], b: list[tf.Variable], atol: float = 1e-6) -> None:
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x.numpy(), y.numpy(), atol=atol, err_msg=x.name)


@pytest.mark.parametrize(
    "config",
    [
        # A small clip norm so that clipping acts on every step; normalized advantages need batch statistics.
        ImpalaConfig(hidden_sizes=(16,), max_grad_norm=0.05, normalize_advantages=True, learning_rate=1e-2, adam_epsilon=ADAM_EPSILON),
        ImpalaConfig(hidden_sizes=(16,), lstm_size=8, previous_action_reward=False, learning_rate=1e-2, adam_epsilon=ADAM_EPSILON),
        ImpalaConfig(hidden_sizes=(16,), epochs=2, minibatches=2, ppo_clip=0.2, normalize_advantages=True, adam_epsilon=ADAM_EPSILON),
    ],
    ids=["one-pass-clipped-normalized", "lstm", "ppo-reuse"],
)
def test_two_replicas_make_the_update_one_device_makes(config: ImpalaConfig) -> None:
    one = ImpalaAgent(SPEC, config, Replicas(ONE), seed=0)
    two = ImpalaAgent(SPEC, config, Replicas(TWO), seed=0)
    copy_weights(one.network.weights, two.network.weights)
    rng = np.random.default_rng(0)
    before = [w.numpy() for w in one.network.weights]
    for _ in range(3):
        batch = impala_batch(rng, config.lstm_size)
        metrics_one, metrics_two = one.train_step(batch), two.train_step(batch)
        for name, value in metrics_one.items():
            assert metrics_two[name] == pytest.approx(value, rel=1e-4, abs=1e-6), name
    assert_same_weights(one.network.weights, two.network.weights)
    assert_same_weights(one.optimizer.variables, two.optimizer.variables)
    moved = max(float(np.abs(w.numpy() - b).max()) for w, b in zip(one.network.weights, before))
    assert moved > 1e-3  # the comparison is between updates that happened


def test_each_device_holds_a_copy_and_the_copies_stay_equal() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(16,), learning_rate=1e-2), Replicas(TWO), seed=0)
    agent.train_step(impala_batch(np.random.default_rng(1)))
    for variable in agent.network.weights:
        copies = variable.value.values  # keras.Variable -> tf MirroredVariable -> one per device
        assert sorted(copy.device.rsplit("/", 1)[-1] for copy in copies) == ["device:CPU:0", "device:CPU:1"]
        np.testing.assert_array_equal(copies[0].numpy(), copies[1].numpy())


def test_r2d2_on_two_replicas_matches_one_device_and_its_priorities() -> None:
    config = R2D2Config(lstm_size=8, hidden_sizes=(8,), burn_in=2, learning_rate=1e-2, target_update_period=2)
    one, two = R2D2Agent(SPEC, config, Replicas(ONE)), R2D2Agent(SPEC, config, Replicas(TWO))
    copy_weights(one.network.weights, two.network.weights)
    two.update_target()
    rng = np.random.default_rng(2)
    steps = config.burn_in + T + 1
    for _ in range(3):
        batch = {
            "observation": rng.normal(size=(steps, B, 4)).astype(np.float32),
            "action": rng.integers(0, 3, (steps, B), dtype=np.int32),
            "reward": rng.normal(size=(steps, B)).astype(np.float32),
            "done": rng.random((steps, B)) < 0.05,
            "phantom": np.zeros((steps, B), bool),
            "core_h": np.zeros((B, 8), np.float32),
            "core_c": np.zeros((B, 8), np.float32),
            "prev_action": np.eye(3, dtype=np.float32)[rng.integers(0, 3, B)],
            "weights": rng.random(B).astype(np.float32),
        }
        a, b = one.train_step(batch), two.train_step(batch)
        assert b["priorities"].shape == (B,)
        np.testing.assert_allclose(b["priorities"], a["priorities"], rtol=1e-4, atol=1e-6)  # in batch order
        assert b["losses/total"] == pytest.approx(a["losses/total"], rel=1e-4)
    assert_same_weights(one.network.weights, two.network.weights)
    assert_same_weights(one.target_network.weights, two.target_network.weights)


@pytest.mark.parametrize(("saved_on", "restored_on"), [(TWO, ONE), (ONE, TWO)], ids=["two->one", "one->two"])
def test_checkpoints_move_between_one_and_two_devices(
    tmp_path: pathlib.Path, saved_on: tuple[str, ...], restored_on: tuple[str, ...]
) -> None:
    config = ImpalaConfig(hidden_sizes=(16,), learning_rate=1e-2)
    trained = ImpalaAgent(SPEC, config, Replicas(saved_on), seed=0)
    for _ in range(2):
        trained.train_step(impala_batch(np.random.default_rng(3)))
    trained.set_learning_rate(5e-3)
    Checkpointer(tmp_path, trained.checkpoint_objects()).save(Progress(train_steps=2, frames=100))

    restored = ImpalaAgent(SPEC, config, Replicas(restored_on), seed=1)
    progress = Checkpointer(tmp_path, restored.checkpoint_objects()).restore()
    assert progress == Progress(train_steps=2, frames=100)
    assert_same_weights(trained.network.weights, restored.network.weights, atol=0)
    assert_same_weights(trained.optimizer.variables, restored.optimizer.variables, atol=0)
    assert restored.learning_rate == pytest.approx(5e-3)
    # And it trains on from there exactly as the original does.
    batch = impala_batch(np.random.default_rng(4))
    trained.train_step(batch)
    restored.train_step(batch)
    assert_same_weights(trained.network.weights, restored.network.weights)


def test_inference_takes_its_devices_in_turn_and_answers_alike() -> None:
    replicas = Replicas(ONE, inference=TWO)
    assert [replicas.inference_device() for _ in range(4)] == ["/CPU:0", "/CPU:1", "/CPU:0", "/CPU:1"]
    agent = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(16,)), Replicas(TWO, inference=TWO), seed=0)
    observations = np.random.default_rng(5).normal(size=(16, 4)).astype(np.float32)
    first, _ = agent.infer(observations, {})
    second, _ = agent.infer(observations, {})  # the other device, reading its own copy
    np.testing.assert_allclose(first["logits"], second["logits"], atol=1e-6)


def test_a_batch_that_does_not_split_evenly_is_refused() -> None:
    agent = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(16,)), Replicas(TWO), seed=0)
    batch = impala_batch(np.random.default_rng(6))
    odd = {name: column[:, :5] for name, column in batch.items()}
    with pytest.raises(ValueError, match="multiple of the 2 training devices"):
        agent.train_step(odd)


def test_xla_compiles_the_one_device_step_and_is_refused_on_two() -> None:
    config = ImpalaConfig(hidden_sizes=(16,), jit_compile=True)
    agent = ImpalaAgent(SPEC, config, Replicas(ONE), seed=0)
    metrics = agent.train_step(impala_batch(np.random.default_rng(7)))
    assert np.isfinite(metrics["losses/total"]) and metrics["skipped_nonfinite"] == 0
    with pytest.raises(ValueError, match="jit_compile trains on one device only"):
        ImpalaAgent(SPEC, config, Replicas(TWO))
