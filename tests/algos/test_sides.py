"""One policy per side (``--self-play.opponent separate``): each row is answered by its side's network and keeps its
side in the unrolls; a train step updates each network on its own side's unrolls only; both are checkpointed."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.algos.agent import SKIPPED
from aioseed.algos.impala.agent import ImpalaAgent
from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.sides import SIDE, SidedAgent
from aioseed.server.acting.step import acting_for
from aioseed.server.training.checkpoint import Checkpointer
from aioseed.server.training.trainer import Progress
from aioseed.spec import EnvSpec
from aioseed.types import Rows

SPEC = EnvSpec((4,), "float32", 3, players=(1, 1))
RIGHT = np.array([False, True, False, True])
"""Two 1 + 1 games: slots 0 and 2 are left-side players, 1 and 3 right-side ones."""
T = 4


def sided(**overrides) -> SidedAgent:
    config = ImpalaConfig(hidden_sizes=(16,), **overrides)
    return SidedAgent(ImpalaAgent(SPEC, config, seed=0), ImpalaAgent(SPEC, config, seed=1))


def weights(agent: ImpalaAgent) -> list[np.ndarray]:
    return [v.numpy().copy() for v in agent.policy_variables()]


def changed(before: list[np.ndarray], agent: ImpalaAgent) -> bool:
    return any(not np.array_equal(a, b) for a, b in zip(before, weights(agent), strict=True))


def rows(observations: np.ndarray) -> Rows:
    return Rows(
        slot=np.arange(4, dtype=np.int32), run_id=np.ones(4, np.uint64), reward=np.ones(4, np.float32),
        flags=np.zeros(4, np.uint8), observation=observations, evaluation=np.zeros(4, bool), right=RIGHT,
    )


def batch_of_both_sides(agent: SidedAgent) -> dict[str, np.ndarray]:
    """One unroll per slot, through the learner's acting: time-major columns ``[T + 1, 4]``."""
    acting = acting_for(agent, SPEC, T, lambda: 0)
    generator = np.random.default_rng(0)
    for _ in range(T + 1):
        result = acting.step(rows(generator.normal(size=(4, 4)).astype(np.float32)))
    unrolls = result.unrolls
    assert unrolls is not None and unrolls["slot"].tolist() == [0, 1, 2, 3]
    return {name: column if name == "slot" else np.swapaxes(column, 0, 1) for name, column in unrolls.items()}


def test_each_row_is_answered_by_its_sides_network() -> None:
    agent = sided()
    observations = np.random.default_rng(1).normal(size=(4, 4)).astype(np.float32)
    outputs, _ = agent.infer_sides(observations, {}, None, None, None, RIGHT)
    left, _ = agent.left.infer(observations[~RIGHT], {})
    right, _ = agent.right.infer(observations[RIGHT], {})
    np.testing.assert_allclose(outputs["logits"][~RIGHT], left["logits"], rtol=1e-6)
    np.testing.assert_allclose(outputs["logits"][RIGHT], right["logits"], rtol=1e-6)
    assert not np.allclose(left["logits"], agent.right.infer(observations[~RIGHT], {})[0]["logits"])  # two networks
    assert outputs[SIDE].tolist() == [0, 1, 0, 1]
    assert agent.infer(observations, {})[0][SIDE].tolist() == [0, 0, 0, 0]  # infer: every row the left side's


def test_the_unrolls_keep_their_side_and_each_network_trains_on_its_own() -> None:
    agent = sided(epochs=2, minibatches=2)
    batch = batch_of_both_sides(agent)
    assert (batch[SIDE] == RIGHT.astype(np.int8)).all()  # every step of an unroll keeps its row's side

    left_only = {name: column[~RIGHT] if name == "slot" else column[:, ~RIGHT] for name, column in batch.items()}
    before = weights(agent.left), weights(agent.right)
    updates = []
    metrics = agent.train_step(left_only, lambda: updates.append(1))
    assert changed(before[0], agent.left) and not changed(before[1], agent.right)
    assert len(updates) == 4 and not any(name.startswith("right/") for name in metrics)

    before = weights(agent.left), weights(agent.right)
    metrics = agent.train_step(batch, lambda: updates.append(1))
    assert changed(before[0], agent.left) and changed(before[1], agent.right)
    assert len(updates) == 4 + 8, "the version counts both networks' updates"
    assert np.isfinite(metrics["losses/total"]) and np.isfinite(metrics["right/losses/total"]) and metrics[SKIPPED] == 0


def test_a_sides_share_smaller_than_the_minibatches_makes_fewer_updates() -> None:
    agent = sided(epochs=1, minibatches=4)
    batch = batch_of_both_sides(agent)
    one_right = np.array([True, True, True, False])  # 2 left unrolls, 1 right one
    share = {name: column[one_right] if name == "slot" else column[:, one_right] for name, column in batch.items()}
    updates = []
    metrics = agent.train_step(share, lambda: updates.append(1))
    assert len(updates) == 2 + 1
    assert np.isfinite(metrics["losses/total"]) and np.isfinite(metrics["right/losses/total"])


def test_both_networks_are_checkpointed(tmp_path) -> None:
    agent = sided()
    assert {"network", "optimizer", "right_network", "right_optimizer"} <= agent.checkpoint_objects().keys()
    Checkpointer(tmp_path, agent.checkpoint_objects()).save(Progress(1, 10))
    restored = sided()
    Checkpointer(tmp_path, restored.checkpoint_objects()).restore()
    for mine, theirs in ((agent.left, restored.left), (agent.right, restored.right)):
        assert not changed(weights(mine), theirs)


def test_several_training_devices_are_refused() -> None:
    class TwoDevices:
        count = 2

    left = ImpalaAgent(SPEC, ImpalaConfig(hidden_sizes=(16,)))
    left.replicas = TwoDevices()
    with pytest.raises(ValueError, match="one device"):
        SidedAgent(left, left)


def test_a_warm_start_loads_both_sides_policies(tmp_path) -> None:
    """--init-checkpoint of a run with a policy per side: the right side's weights were left at their initial values."""
    from aioseed.compose.config import LearnerConfig
    from aioseed.compose.learner import warm_start
    from aioseed.envs.football import FootballConfig
    from aioseed.server.config import SelfPlayConfig

    trained = sided()
    Checkpointer(tmp_path / "old", trained.checkpoint_objects()).save(Progress(10, 100))
    config = LearnerConfig(
        env="football:academy_3_vs_1_with_keeper", football=FootballConfig(right_players=1),
        self_play=SelfPlayConfig(opponent="separate"), init_checkpoint=tmp_path / "old",
    )
    fresh = sided()
    for variable in fresh.right.network.weights:  # so that a right side left as it was differs from the source
        variable.assign(variable + 1.0)
    assert Checkpointer(tmp_path / "new", fresh.checkpoint_objects(), warm_start=warm_start(config)).restore() is None
    for side in ("left", "right"):
        for loaded, source in zip(getattr(fresh, side).network.weights, getattr(trained, side).network.weights, strict=True):
            np.testing.assert_array_equal(loaded.numpy(), source.numpy())
