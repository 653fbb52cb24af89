"""Self-play's right side: its rows are answered by the opponent and never stored, each side keeps its own
recurrent state; the frozen opponent copies the learner's weights only every refresh_frames, and its
checkpoint brings back the same weights, version and frames."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from aioseed.algos.impala.config import ImpalaConfig
from aioseed.algos.impala.policy import ImpalaPolicy
from aioseed.server.acting.core_states import CoreStates
from aioseed.server.acting.env_table import EnvTable
from aioseed.server.acting.opponent import FrozenOpponent
from aioseed.server.acting.step import Acting
from aioseed.server.training.checkpoint import Checkpointer
from aioseed.server.training.trainer import Progress
from aioseed.server.trajectories.unroll_store import UnrollStore
from aioseed.spec import EnvSpec
from aioseed.types import Rows, step_columns

COLUMNS = {"count": ((1,), np.float32)}


class Constant:
    """Answers every row with ``action``; its state counts the row's steps."""

    def __init__(self, action: int) -> None:
        self.action = action
        self.rows_seen = 0

    def infer(self, observations, state, slots, evaluation=None, rewards=None):
        self.rows_seen += len(observations)
        return {"action": np.full(len(observations), self.action, np.int32)}, {"count": state["count"] + 1}

    def metrics(self) -> dict[str, float]:
        return {"selfplay/opponent_version": 3.0}


def rows(step: int) -> Rows:
    """Two 1 + 1 games: slots 0 and 2 are left-side players, 1 and 3 right-side ones."""
    return Rows(
        slot=np.arange(4, dtype=np.int32), run_id=np.ones(4, np.uint64), reward=np.zeros(4, np.float32),
        flags=np.zeros(4, np.uint8), observation=np.full(4, step, np.float32), evaluation=np.zeros(4, bool),
        right=np.array([False, True, False, True]),
    )


def test_right_side_rows_are_answered_by_the_opponent_and_never_stored() -> None:
    columns = {**step_columns((), np.float32), "action": ((), np.int32), **COLUMNS}
    store = UnrollStore(2, columns, overlap=1, first_step_only=COLUMNS.keys())
    own, opponent = Constant(1), Constant(7)
    acting = Acting(
        policy=own, envs=EnvTable(), store=store, version=lambda: 0, space=19, stacker=None, states=CoreStates(COLUMNS),
        opponent=opponent,
    )
    unrolls = []
    for step in range(3):
        result = acting.step(rows(step))
        assert result.actions.tolist() == [1, 7, 1, 7]
        assert result.call.learn.tolist() == [True, False, True, False]
        if result.unrolls is not None:
            unrolls.append(result.unrolls)
    assert (own.rows_seen, opponent.rows_seen) == (6, 6)
    assert unrolls and all(sorted(u["slot"].tolist()) == [0, 2] for u in unrolls)  # the left side's only
    assert acting.metrics() == {"selfplay/opponent_version": 3.0}


def test_the_frozen_opponent_copies_the_weights_only_every_refresh_frames_and_checkpoints_them(tmp_path) -> None:
    spec = EnvSpec((4,), "float32", 2, players=(1, 1))
    live, frozen = ImpalaPolicy(spec, ImpalaConfig()), ImpalaPolicy(spec, ImpalaConfig())
    opponent = FrozenOpponent(live, frozen, refresh_frames=100)

    def weights(policy: ImpalaPolicy) -> list[np.ndarray]:
        return [v.numpy().copy() for v in policy.policy_variables()]

    def same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
        return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))

    assert same(weights(frozen), weights(live))  # it starts as a copy
    first = weights(live)
    for variable in live.policy_variables():
        variable.assign_add(tf.ones_like(variable))
    opponent.after_update(version=5, frames=99)  # not yet 100 frames since the last copy
    assert same(weights(frozen), first) and opponent.version == 0
    opponent.after_update(version=6, frames=100)
    assert same(weights(frozen), weights(live)) and (opponent.version, opponent.frames_at) == (6, 100)
    kept = weights(frozen)

    checkpointer = Checkpointer(tmp_path, opponent.checkpoint_objects())
    checkpointer.save(Progress(6, 100))
    target = ImpalaPolicy(spec, ImpalaConfig())
    restored = FrozenOpponent(live, target, refresh_frames=100)
    for variable in live.policy_variables():
        variable.assign_add(tf.ones_like(variable))  # the restored opponent must not be a copy of these
    Checkpointer(tmp_path, restored.checkpoint_objects()).restore()
    assert (restored.version, restored.frames_at) == (6, 100)
    assert same(weights(target), kept)
    assert restored.metrics() == {"selfplay/opponent_version": 6.0, "selfplay/opponent_frames": 100.0}


def test_a_warm_started_runs_opponent_starts_from_the_warm_start_not_the_initial_weights(tmp_path) -> None:
    """The opponent copies the learner when it is built, before ``--init-checkpoint``'s weights are loaded: a new run
    copies again once they are (a resumed run keeps its restored opponent)."""
    from aioseed.compose.learner import on_restored
    from aioseed.server.training.checkpoint import WarmStart

    spec = EnvSpec((4,), "float32", 2, players=(1, 1))
    pretrained = ImpalaPolicy(spec, ImpalaConfig())
    Checkpointer(tmp_path / "pretrained", {"network": pretrained.network}).save(Progress(50, 5000))
    live, frozen = ImpalaPolicy(spec, ImpalaConfig()), ImpalaPolicy(spec, ImpalaConfig())
    opponent = FrozenOpponent(live, frozen, refresh_frames=100)
    directory = tmp_path / "run" / "checkpoints"
    checkpointer = Checkpointer(
        directory, {"network": live.network, **opponent.checkpoint_objects()},
        warm_start=WarmStart(tmp_path / "pretrained", ("network",)),
        restored=on_restored(lambda: None, opponent, lambda: checkpointer.latest is None),  # as app.build
    )
    assert checkpointer.restore() is None  # a new run, warm-started
    for played, loaded in zip(frozen.policy_variables(), pretrained.policy_variables(), strict=True):
        np.testing.assert_array_equal(played.numpy(), loaded.numpy())  # before: the initial weights
