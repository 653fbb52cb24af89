"""``--learner.impala.init``: orthogonal weights with the PPO references' gains, or Keras's Glorot default."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.policy import ImpalaPolicy
from aioseed.spec import EnvSpec

VECTOR = EnvSpec(observation_shape=(8,), observation_dtype="float32", action_space=3)
PONG = EnvSpec(observation_shape=(4, 84, 84), observation_dtype="uint8", action_space=6)


def _orthogonality_error(kernel: np.ndarray, gain: float) -> float:
    """max |K^T K / gain^2 - I| over a kernel flattened to [fan_in, fan_out] with fan_in >= fan_out."""
    k = kernel.reshape(-1, kernel.shape[-1])
    return float(np.abs(k.T @ k / gain**2 - np.eye(k.shape[1])).max())


def test_orthogonal_torso_has_gain_sqrt2_and_value_head_gain_one() -> None:
    network = ImpalaPolicy(VECTOR, ImpalaConfig(init="orthogonal", hidden_sizes=(32, 16))).network
    first, second = (layer.kernel.numpy() for layer in network.policy_torso.layers)  # [8, 32]: orthogonal rows
    assert np.abs(first @ first.T / 2 - np.eye(8)).max() < 1e-4
    assert _orthogonality_error(second, np.sqrt(2)) < 1e-4
    assert _orthogonality_error(network.value.kernel.numpy(), 1.0) < 1e-4
    assert _orthogonality_error(network.policy.kernel.numpy(), 0.01) < 1e-4


def test_glorot_is_the_default_and_is_not_orthogonal() -> None:
    network = ImpalaPolicy(VECTOR, ImpalaConfig(hidden_sizes=(32, 16))).network
    assert _orthogonality_error(network.policy_torso.layers[1].kernel.numpy(), np.sqrt(2)) > 0.1


def test_orthogonal_nature_cnn_starts_with_larger_features() -> None:
    """On frames in [0, 1], the torso's output RMS grows several-fold with orthogonal sqrt 2 (ReLU keeps it)."""
    frames = np.random.default_rng(0).integers(0, 256, (16, *PONG.observation_shape), dtype=np.uint8)
    rms = {}
    for init in ("glorot", "orthogonal"):
        network = ImpalaPolicy(PONG, ImpalaConfig(init=init, network="nature_cnn")).network
        rms[init] = float(np.sqrt(np.mean(np.square(network.features(frames).numpy()))))
        conv = network.torso.layers[0].kernel.numpy()  # [8, 8, 4, 32]: fan_in 256 >= 32
        assert (_orthogonality_error(conv, np.sqrt(2)) < 1e-4) == (init == "orthogonal")
    assert rms["orthogonal"] > 3 * rms["glorot"]


def test_lstm_core_is_orthogonal_with_orthogonal_init() -> None:
    network = ImpalaPolicy(VECTOR, ImpalaConfig(init="orthogonal", lstm_size=8)).network
    assert _orthogonality_error(network.cell.kernel.numpy(), 1.0) < 1e-4  # [64 features, 4 x 8 units]


def test_unknown_init_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown init"):
        ImpalaPolicy(VECTOR, ImpalaConfig(init="he"))  # type: ignore[arg-type]
