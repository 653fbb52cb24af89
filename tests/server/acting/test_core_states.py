"""Recurrent state per env slot on the learner: reset at episode starts and run_id changes, stored per unroll."""

from __future__ import annotations

import numpy as np

from aioseed.server.acting.core_states import CoreStates
from aioseed.server.acting.env_table import EnvTable
from aioseed.server.acting.step import Acting
from aioseed.server.trajectories.unroll_store import UnrollStore
from aioseed.types import FINAL, TERMINATED, TRUNCATED, Rows, step_columns

T = 4
COLUMNS = {"count": ((1,), np.float32)}


class CountingPolicy:
    """State = steps since the episode started; the action reports the state it was given."""

    def infer(self, observations, state, slots, evaluation=None, rewards=None):
        return {"action": state["count"][:, 0].astype(np.int32)}, {"count": state["count"] + 1}


def make_acting(policy: CountingPolicy | None = None) -> Acting:
    columns = {**step_columns((), np.float32), "action": ((), np.int32), **COLUMNS}
    store = UnrollStore(T, columns, overlap=1, first_step_only=COLUMNS.keys())
    return Acting(
        policy=policy or CountingPolicy(), envs=EnvTable(), store=store, version=lambda: 0, space=2**31 - 1, stacker=None,
        states=CoreStates(COLUMNS),
    )


def step(acting: Acting, slots: list[int], runs: list[int], flags: list[int]):
    inputs = Rows(
        slot=np.array(slots, np.int32),
        run_id=np.array(runs, np.uint64),
        reward=np.zeros(len(slots), np.float32),
        flags=np.array(flags, np.uint8),
        observation=np.zeros(len(slots), np.float32),
        evaluation=np.zeros(len(slots), bool),
    )
    return acting.step(inputs)


def test_state_follows_each_slot_and_restarts_with_episodes_and_runs() -> None:
    acting = make_acting()
    actions = [step(acting, [0, 5], [1, 2], [0, 0]).actions.tolist() for _ in range(3)]
    assert actions == [[0, 0], [1, 1], [2, 2]]
    # Slot 0's episode ends: FINAL row (same episode, its state carries on), then the reset row restarts.
    assert step(acting, [0, 5], [1, 2], [TRUNCATED | FINAL, 0]).actions.tolist() == [3, 3]
    assert step(acting, [5, 0], [2, 1], [0, 0]).actions.tolist() == [4, 0]
    # SEED's convention: a TERMINATED row already carries the new episode's first observation.
    assert step(acting, [5], [2], [TERMINATED]).actions.tolist() == [0]
    # A new run_id (the actor restarted) restarts the state too.
    assert step(acting, [0, 5], [9, 2], [0, 0]).actions.tolist() == [0, 1]


def test_unrolls_carry_the_state_at_their_first_step() -> None:
    acting = make_acting()
    unrolls = []
    for _ in range(3 * T + 1):
        result = step(acting, [3], [7], [0])
        if result.unrolls is not None:
            unrolls.append(result.unrolls)
    assert [u["count"].tolist() for u in unrolls] == [[[0.0]], [[T]], [[2.0 * T]]]
    assert all(u["action"].shape == (1, T + 1) for u in unrolls)
    assert unrolls[1]["action"][0, 0] == T  # the overlapping step: its state is what the core saw there


def test_evaluation_rows_reach_the_policy_and_are_never_stored() -> None:
    seen = []

    class Recording(CountingPolicy):
        def infer(self, observations, state, slots, evaluation=None, rewards=None):
            seen.append(evaluation.copy())
            return super().infer(observations, state, slots)

    acting = make_acting(Recording())
    unrolls = []
    for t in range(3 * T):
        flags = [TERMINATED, TERMINATED] if t == 2 * T else [0, 0]
        inputs = Rows(
            slot=np.array([1, 2], np.int32),
            run_id=np.array([5, 6], np.uint64),
            reward=np.ones(2, np.float32),
            flags=np.array(flags, np.uint8),
            observation=np.zeros(2, np.float32),
            evaluation=np.array([False, True]),
        )
        result = acting.step(inputs)
        assert result.boundaries.env_steps == 1  # frames count the training env only
        if result.unrolls is not None:
            unrolls.append(result.unrolls)
        if t == 2 * T:
            assert result.evaluation_episodes.tolist() == [False, True]
    assert all(e.tolist() == [False, True] for e in seen)
    assert len(unrolls) == 2 and all(u["slot"].tolist() == [1] for u in unrolls)
