"""Unroll assembly on the learner: overlap, resets, disconnects and truncation."""

from __future__ import annotations

import numpy as np

from aioseed.server.acting.env_table import EnvTable
from aioseed.server.acting.step import append, observe
from aioseed.server.trajectories.unroll_store import UnrollStore
from aioseed.types import FINAL, TERMINATED, TRUNCATED, Rows, step_columns

T = 3
RUN_A, RUN_B = 11, 22


def make_store(unroll_length: int = T, overlap: int = 1) -> UnrollStore:
    return UnrollStore(
        unroll_length,
        {**step_columns((), np.float32), "action": ((), np.int32)},
        overlap=overlap,
    )


class Env:
    """Feeds rows for one or more slots through ``observe`` and ``append`` like the inference loop does."""

    def __init__(self, unroll_length: int = T) -> None:
        self.envs = EnvTable()
        self.store = make_store(unroll_length)
        self.unrolls: list[dict[str, np.ndarray]] = []
        self.episodes: list[tuple[float, int]] = []
        self.partial = 0

    def row(self, obs: float, *, slot: int = 0, run: int = RUN_A, reward: float = 0.0, flags: int = 0, reconnected: bool = False):
        inputs = Rows(
            slot=np.array([slot], np.int32),
            run_id=np.array([run], np.uint64),
            reward=np.array([reward], np.float32),
            flags=np.array([flags], np.uint8),
            observation=np.array([obs], np.float32),
            evaluation=np.zeros(1, bool),
            reconnected=np.array([reconnected]),
        )
        boundaries = observe(self.envs, self.store, inputs)
        self.partial += len(boundaries.partial_rows)
        unrolls = append(self.store, inputs, inputs["observation"], boundaries, {"action": np.array([1], np.int32)}, 0)
        self.episodes += list(zip(boundaries.episode_returns.tolist(), boundaries.episode_lengths.tolist()))
        if unrolls is not None:
            self.unrolls += [{k: v[i] for k, v in unrolls.items()} for i in range(len(unrolls["slot"]))]
        return boundaries


def test_consecutive_unrolls_overlap_by_one_step() -> None:
    store = make_store()
    slots = np.array([0, 5], np.int32)  # slot 5 also forces the buffers to grow
    emitted = []
    for t in range(7):
        step = {
            "observation": np.array([t, 100 + t], np.float32),
            "reward": np.zeros(2, np.float32),
            "done": np.zeros(2, bool),
            "phantom": np.zeros(2, bool),
            "version": np.zeros(2, np.int64),
            "action": np.zeros(2, np.int32),
        }
        out = store.append(slots, step)
        if out is not None:
            emitted.append(out)
    assert len(emitted) == 2  # after steps 0..3 and 3..6
    np.testing.assert_array_equal(emitted[0]["observation"], [[0, 1, 2, 3], [100, 101, 102, 103]])
    np.testing.assert_array_equal(emitted[1]["observation"], [[3, 4, 5, 6], [103, 104, 105, 106]])
    np.testing.assert_array_equal(emitted[1]["slot"], [0, 5])


def test_burn_in_overlap_keeps_more_steps() -> None:
    store = make_store(unroll_length=4, overlap=3)
    got = []
    for t in range(8):
        out = store.append(np.array([2], np.int32), {
            "observation": np.array([t], np.float32), "reward": np.zeros(1, np.float32),
            "done": np.zeros(1, bool), "phantom": np.zeros(1, bool),
            "version": np.zeros(1, np.int64), "action": np.zeros(1, np.int32),
        })
        if out is not None:
            got.append(out["observation"][0].tolist())
    assert got == [[0, 1, 2, 3, 4], [2, 3, 4, 5, 6]]


def test_run_id_change_discards_the_partial_unroll_and_resets_state() -> None:
    env = Env()
    env.row(0.0)
    env.row(1.0, reward=5.0)
    env.row(2.0, reward=5.0)  # 3 of 4 steps of run A
    first = env.row(10.0, run=RUN_B, reward=99.0)
    assert first.fresh[0]
    for t in range(11, 14):
        env.row(float(t), run=RUN_B, reward=1.0)
    env.row(14.0, run=RUN_B, reward=1.0, flags=TERMINATED)
    assert len(env.unrolls) == 1
    np.testing.assert_array_equal(env.unrolls[0]["observation"], [10, 11, 12, 13])
    # Run A's 10 reward points are gone and run B's first reward is not counted.
    assert env.episodes == [(4.0, 4)]


def test_disconnect_discards_the_partial_unroll_but_keeps_the_episode() -> None:
    env = Env()
    env.row(0.0)
    env.row(1.0, reward=1.0)
    env.row(2.0, reward=1.0)
    env.envs.forget(np.array([0]))
    resumed = env.row(2.0, reward=1.0)  # the actor re-sends its unanswered row
    assert resumed.fresh[0] and not resumed.done[0]
    for t in range(3, 6):
        env.row(float(t), reward=1.0)
    np.testing.assert_array_equal(env.unrolls[0]["observation"], [2, 3, 4, 5])
    env.row(0.0, reward=1.0, flags=TERMINATED)
    assert env.episodes == [(6.0, 6)]  # the re-sent row is not counted twice


def test_an_episode_end_re_sent_after_a_disconnect_is_dropped_and_the_next_episode_starts_at_zero() -> None:
    """It was not counted (fresh) nor reported, but its rewards used to run on into the next episode's return."""
    env = Env()
    env.row(0.0)
    for t in range(1, 6):
        env.row(float(t), reward=1.0)
    env.envs.forget(np.array([0]))
    env.row(6.0, reward=1.0, flags=TERMINATED | FINAL)  # the unanswered final row, re-sent on the new stream
    env.row(0.0)  # the reset row
    for t in range(1, 5):
        env.row(float(t), reward=1.0)
    env.row(5.0, reward=1.0, flags=TERMINATED | FINAL)
    assert env.episodes == [(5.0, 5)]  # the dropped episode's 5 rewards are not in it


def test_an_episode_met_mid_way_after_a_reconnect_is_partial_and_not_reported() -> None:
    """A learner restarted since (a new EnvTable) meets an actor that reconnected with its env mid-episode: the
    rewards before the restart are lost to it, so that episode's return is a part of the game's."""
    env = Env()
    for t in range(10, 14):  # the unanswered row re-sent, then the game goes on
        env.row(float(t), reward=1.0, reconnected=True)
    ended = env.row(14.0, reward=1.0, flags=TERMINATED | FINAL, reconnected=True)
    assert env.episodes == [] and env.partial == 1 and len(ended.ended_rows) == 0
    assert ended.done[0] and ended.phantom[0]  # training still sees the boundary
    env.row(0.0, reconnected=True)  # the reset row: the next episode is whole
    for t in range(1, 4):
        env.row(float(t), reward=2.0, reconnected=True)
    env.row(4.0, reward=2.0, flags=TRUNCATED, reconnected=True)
    assert env.episodes == [(8.0, 4)] and env.partial == 1


def test_a_run_that_reconnects_to_another_slot_is_partial_there() -> None:
    env = Env()
    env.row(0.0)  # a first connection: the reset row
    for t in range(1, 4):
        env.row(float(t), reward=1.0)
    env.envs.forget(np.array([0]))
    for t in range(4, 6):  # slot 0 was not granted again: the env plays on in slot 3
        env.row(float(t), slot=3, reward=1.0, reconnected=True)
    env.row(6.0, slot=3, reward=1.0, flags=TERMINATED | FINAL, reconnected=True)
    assert env.episodes == [] and env.partial == 1


def test_a_run_that_gets_its_slot_back_carries_on_its_episode_whole() -> None:
    env = Env()
    env.row(0.0)
    for t in range(1, 4):
        env.row(float(t), reward=1.0)
    env.envs.forget(np.array([0]))
    env.row(3.0, reward=1.0, reconnected=True)  # the unanswered row, re-sent: not counted twice
    env.row(4.0, reward=1.0, flags=TERMINATED | FINAL, reconnected=True)
    assert env.episodes == [(4.0, 4)] and env.partial == 0


def test_partial_and_whole_episodes_ending_in_one_batch_report_the_whole_one_only() -> None:
    table = EnvTable()
    slots, flags = np.array([0, 1], np.int32), np.zeros(2, np.uint8)
    runs, ones = np.array([RUN_A, RUN_B], np.uint64), np.ones(2, np.float32)
    table.observe(slots, runs, np.zeros(2, np.float32), flags, np.array([False, True]))  # slot 1 met mid-way
    table.observe(slots, runs, ones, flags, np.array([False, True]))
    ended = table.observe(slots, runs, ones, np.full(2, TERMINATED | FINAL, np.uint8), np.array([False, True]))
    assert ended.ended_rows.tolist() == [0] and ended.episode_returns.tolist() == [2.0] and ended.partial_rows.tolist() == [1]
    after = table.observe(slots, runs, np.zeros(2, np.float32), flags, np.array([False, True]))  # both reset rows
    assert after.done.tolist() == [True, True]
    table.observe(slots, runs, ones, flags, np.array([False, True]))
    ended = table.observe(slots, runs, ones, np.full(2, TERMINATED | FINAL, np.uint8), np.array([False, True]))
    assert ended.ended_rows.tolist() == [0, 1] and ended.episode_returns.tolist() == [2.0, 2.0] and ended.partial_rows.tolist() == []


def test_termination_zeroes_the_discount_into_the_reset_row() -> None:
    env = Env()
    env.row(0.0)
    env.row(1.0, reward=1.0)
    ended = env.row(50.0, reward=2.0, flags=TERMINATED)  # first obs of the next episode
    assert ended.done[0] and not ended.phantom[0]
    env.row(51.0, reward=1.0)
    unroll = env.unrolls[0]
    np.testing.assert_array_equal(unroll["done"], [False, False, True, False])
    np.testing.assert_array_equal(unroll["phantom"], [False] * 4)
    assert env.episodes == [(3.0, 2)]


def test_truncation_keeps_the_bootstrap_and_adds_a_phantom_row() -> None:
    env = Env()
    env.row(0.0)
    env.row(1.0, reward=1.0)
    final = env.row(2.0, reward=2.0, flags=TRUNCATED)  # the final observation
    assert final.phantom[0] and not final.done[0] and final.env_steps == 0
    reset = env.row(50.0, reward=0.0)  # first obs of the next episode
    assert reset.done[0] and not reset.phantom[0]
    unroll = env.unrolls[0]
    np.testing.assert_array_equal(unroll["observation"], [0, 1, 2, 50])
    # discount into the final obs stays gamma; into the reset row it is zero
    np.testing.assert_array_equal(unroll["done"], [False, False, False, True])
    np.testing.assert_array_equal(unroll["phantom"], [False, False, True, False])
    assert env.episodes == [(3.0, 2)]


def test_terminated_and_truncated_together_count_as_termination() -> None:
    env = Env()
    env.row(0.0)
    both = env.row(7.0, reward=1.0, flags=TERMINATED | TRUNCATED)
    assert both.done[0] and not both.phantom[0]
    assert env.episodes == [(1.0, 1)]


def test_termination_with_the_final_observation_is_a_phantom_with_zero_discount() -> None:
    # Gymnasium's next-step autoreset: the terminal observation comes first, then the reset row.
    env = Env()
    env.row(0.0)
    env.row(1.0, reward=1.0)
    final = env.row(2.0, reward=2.0, flags=TERMINATED | FINAL)
    assert final.phantom[0] and final.done[0] and final.env_steps == 0
    reset = env.row(50.0, reward=0.0)
    assert reset.done[0] and not reset.phantom[0]
    unroll = env.unrolls[0]
    np.testing.assert_array_equal(unroll["observation"], [0, 1, 2, 50])
    np.testing.assert_array_equal(unroll["done"], [False, False, True, True])
    np.testing.assert_array_equal(unroll["phantom"], [False, False, True, False])
    assert env.episodes == [(3.0, 2)]


def test_truncation_with_the_final_flag_matches_truncation_alone() -> None:
    plain, flagged = Env(), Env()
    for env, flags in ((plain, TRUNCATED), (flagged, TRUNCATED | FINAL)):
        env.row(0.0)
        env.row(1.0, reward=1.0)
        env.row(2.0, reward=2.0, flags=flags)
        env.row(50.0)
    for key in ("done", "phantom", "observation", "reward"):
        np.testing.assert_array_equal(plain.unrolls[0][key], flagged.unrolls[0][key])
    assert plain.episodes == flagged.episodes == [(3.0, 2)]
