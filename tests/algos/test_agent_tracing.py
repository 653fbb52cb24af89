"""Steady state never retraces: inference takes any batch size through one concrete function,
and the train step keeps its one trace across learning-rate changes."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.networks import ImpalaResNetPolicyValue, MLPPolicyValue, NatureCNNPolicyValue, build_policy_value
from aioseed.spec import EnvSpec

PONG = EnvSpec(observation_shape=(4, 84, 84), observation_dtype="uint8", action_space=6)
SMM = EnvSpec(observation_shape=(72, 96, 16), observation_dtype="uint8", action_space=19)  # stacked Super Mini Map


def _batch(agent: ImpalaAgent, steps: int, size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    shape, spec = (steps, size), agent.spec
    return {
        "observation": rng.integers(0, 255, (*shape, *spec.observation_shape), dtype=np.uint8),
        "action": rng.integers(0, spec.num_actions, shape, dtype=np.int32),
        "logits": rng.normal(size=(*shape, spec.num_actions)).astype(np.float32),
        "reward": rng.normal(size=shape).astype(np.float32),
        "done": rng.random(shape) < 0.1,
        "phantom": np.zeros(shape, bool),
        **{name: rng.normal(size=(size, *column)).astype(dtype) for name, (column, dtype) in agent.state_columns().items()},
    }


@pytest.mark.parametrize(
    "spec, network, lstm_size",
    [(PONG, "nature_cnn", 0), (PONG, "impala_resnet", 0), (PONG, "nature_cnn", 32), (SMM, "auto", 0)],
    ids=["nature_cnn", "impala_resnet", "nature_cnn+lstm", "football_resnet"],
)
def test_inference_and_train_step_trace_once(spec: EnvSpec, network: str, lstm_size: int) -> None:
    agent = ImpalaAgent(spec, ImpalaConfig(network=network, lstm_size=lstm_size))
    rng = np.random.default_rng(0)
    for size in (1, 3, 17, 64, 5, 256):
        state = {name: np.zeros((size, *column), dtype) for name, (column, dtype) in agent.state_columns().items()}
        out, next_state = agent.infer(rng.integers(0, 255, (size, *spec.observation_shape), dtype=np.uint8), state)
        assert out["action"].shape == (size,) and out["logits"].shape == (size, spec.num_actions)
        assert {name: value.shape for name, value in next_state.items()} == {
            name: (size, *column) for name, (column, _) in agent.state_columns().items()
        }
    assert agent.policy.act.experimental_get_tracing_count() == 1

    before = [w.numpy().copy() for w in agent.network.trainable_weights]
    for step in range(3):
        metrics = agent.train_step(_batch(agent, 6, 2, rng))
        assert all(np.isfinite(v) for v in metrics.values())
        if step == 1:
            agent.set_learning_rate(1e-4)
    assert agent._train.experimental_get_tracing_count() == 1
    after = agent.network.trainable_weights
    assert all(not np.array_equal(b, a.numpy()) for b, a in zip(before, after))  # every layer learns


def test_auto_picks_seeds_football_resnet_for_channels_last_maps_and_the_nature_cnn_for_stacked_frames() -> None:
    smm = build_policy_value(SMM, "auto")
    assert isinstance(smm, ImpalaResNetPolicyValue) and smm.channels_last and len(smm.stages.layers) == 4
    assert [stage.conv.filters for stage in smm.stages.layers] == [16, 32, 32, 32]
    assert isinstance(build_policy_value(PONG, "auto"), NatureCNNPolicyValue)
    simple115 = EnvSpec(observation_shape=(115,), observation_dtype="float32", action_space=19)
    assert isinstance(build_policy_value(simple115, "auto"), MLPPolicyValue)
