"""Prioritized sequence replay and its sum tree (pure NumPy, no TensorFlow)."""

from __future__ import annotations

import asyncio
import pathlib
import shutil
import threading
import tracemalloc

import numpy as np
import pytest

from aioseed.server.training.trainer import Progress
from aioseed.server.trajectories.replay import Replay
from aioseed.server.trajectories.replay_feed import ReplayFeed
from aioseed.server.trajectories.sum_tree import SumTree

CHI2_DF4_P001 = 18.47  # chi-square critical value, 4 degrees of freedom, p = 0.001


def unrolls(*names: int) -> list[dict[str, int]]:
    return [{"name": n} for n in names]


def test_sum_tree_finds_the_leaf_holding_each_prefix_mass() -> None:
    rng = np.random.default_rng(0)
    tree = SumTree(13)
    values = rng.random(13) * (rng.random(13) < 0.7)  # some zero leaves
    tree.set(np.arange(13), values)
    assert tree.total == pytest.approx(values.sum())
    masses = rng.random(1000) * values.sum()
    expected = np.searchsorted(np.cumsum(values), masses, side="right")
    np.testing.assert_array_equal(tree.find(masses), expected)
    assert (values[tree.find(masses)] > 0).all()


def test_sampling_frequencies_follow_priority_to_the_alpha() -> None:
    replay = Replay(capacity=8, priority_exponent=0.9, seed=1)
    priorities = np.array([1.0, 2.0, 4.0, 8.0, 0.5])
    replay.insert(unrolls(0, 1, 2, 3, 4), priorities)
    counts = np.zeros(5)
    for _ in range(400):
        _, items, _ = replay.sample(50)
        np.add.at(counts, items["name"], 1)
    expected = priorities**0.9 / (priorities**0.9).sum() * counts.sum()
    chi2 = ((counts - expected) ** 2 / expected).sum()
    assert chi2 < CHI2_DF4_P001, (counts, expected)
    # alpha matters: proportional-to-p frequencies would be rejected
    plain = priorities / priorities.sum() * counts.sum()
    assert ((counts - plain) ** 2 / plain).sum() > CHI2_DF4_P001


def test_importance_weights_are_n_p_to_the_minus_beta_over_the_batch_max() -> None:
    replay = Replay(capacity=16, priority_exponent=0.7, importance_exponent=0.6, seed=2)
    priorities = np.array([0.3, 1.0, 5.0, 2.0])
    replay.insert(unrolls(0, 1, 2, 3), priorities)
    ids, items, weights = replay.sample(32)
    p = priorities**0.7 / (priorities**0.7).sum()
    names = items["name"]
    raw = (4 * p[names]) ** -0.6
    np.testing.assert_allclose(weights, raw / raw.max(), rtol=1e-6)
    assert weights.dtype == np.float32 and weights.max() == 1.0
    assert ids.tolist() == names.tolist()  # ids are insertion numbers


def test_every_slice_of_a_sampled_batch_is_a_sample_of_the_whole_replay() -> None:
    """SAC's fused update splits a batch of 1,024 into 4 minibatches of 256 in order. The stratified draws came in
    the tree's order (by age, under uniform priorities), so each minibatch held one quarter of the replay, and the
    policy, updated on every second one, never trained on the newest quarter."""
    replay = Replay(capacity=100_000, seed=0)
    replay.insert(unrolls(*range(10_000)))
    _, items, _ = replay.sample(1024)
    for share in np.split(items["name"], 4):
        assert share.min() < 1_000 and share.max() > 9_000, (share.min(), share.max())
        assert abs(share.mean() - 5_000) < 600, share.mean()  # a uniform sample's mean: 5,000 +- 2.9 sd (180 each)


def test_the_oldest_unrolls_are_evicted_first() -> None:
    replay = Replay(capacity=3, seed=3)
    ids = replay.insert(unrolls(0, 1, 2, 3, 4))
    assert ids.tolist() == [0, 1, 2, 3, 4] and len(replay) == 3
    seen = {int(n) for _ in range(50) for n in replay.sample(8)[1]["name"]}
    assert seen == {2, 3, 4}
    replay.insert(unrolls(5))
    seen = {int(n) for _ in range(50) for n in replay.sample(8)[1]["name"]}
    assert seen == {3, 4, 5}


def test_priority_updates_take_effect_and_evicted_ids_are_ignored() -> None:
    replay = Replay(capacity=4, seed=4)
    replay.insert(unrolls(0, 1, 2, 3))
    assert replay.update_priorities(np.array([0, 1, 2, 3]), np.array([0.0, 0.0, 0.0, 5.0])) == 4
    assert set(replay.sample(64)[1]["name"].tolist()) == {3}
    replay.insert(unrolls(4))  # evicts id 0; its slot now holds id 4 (max priority 5)
    assert replay.update_priorities(np.array([0]), np.array([0.0])) == 0  # stale: not applied to id 4
    ids, items, _ = replay.sample(64)
    assert set(items["name"].tolist()) == {3, 4} and set(ids.tolist()) == {3, 4}
    # New unrolls get the largest priority seen so far.
    replay.update_priorities(np.array([3]), np.array([50.0]))
    replay.insert(unrolls(5))
    counts = np.bincount(replay.sample(1000)[1]["name"], minlength=6)
    assert counts[5] == pytest.approx(counts[3], rel=0.2) and counts[4] < counts[3] / 5


def test_bad_priorities_are_refused() -> None:
    replay = Replay(capacity=4)
    with pytest.raises(ValueError, match="finite priorities"):
        replay.insert(unrolls(0, 1), np.array([1.0, np.inf]))
    with pytest.raises(ValueError, match="need 2"):
        replay.insert(unrolls(0, 1), np.array([1.0]))
    with pytest.raises(LookupError):
        replay.sample(1)
    ids = replay.insert(unrolls(0, 1), np.array([3.0, 1.0]))
    with pytest.raises(ValueError, match="finite priorities"):
        replay.update_priorities(ids, np.array([1.0, np.nan]))


def test_a_new_unroll_without_a_priority_gets_the_largest_seen() -> None:
    """NaN (an agent's priority it could not compute) stands for the largest priority seen, as no priorities do."""
    replay = Replay(capacity=4, priority_exponent=1.0, importance_exponent=1.0, seed=0)
    replay.insert(unrolls(0, 1), np.array([4.0, 1.0]))
    replay.insert(unrolls(2), np.array([np.nan]))
    ids, _, weights = replay.sample(64)
    assert set(ids) == {0, 1, 2}
    by_id = {int(i): float(w) for i, w in zip(ids, weights)}
    assert by_id[2] == pytest.approx(by_id[0]) and by_id[1] == pytest.approx(4 * by_id[0])


def test_concurrent_inserts_and_samples_are_serialized() -> None:
    replay = Replay(capacity=64, seed=5)
    replay.insert(unrolls(*range(8)))
    errors: list[BaseException] = []

    def insert() -> None:
        for i in range(500):
            replay.insert(unrolls(i), np.array([1.0 + i % 7]))

    def sample() -> None:
        try:
            for _ in range(500):
                ids, items, weights = replay.sample(16)
                assert items["name"].shape == (16,) and np.isfinite(weights).all()
                replay.update_priorities(ids, np.ones(16))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=insert), threading.Thread(target=sample)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and replay.inserted == 508 and replay.sampled == 8000


def array_unrolls(count: int, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Unrolls as the learner stores them: arrays of several shapes and dtypes."""
    rng = np.random.default_rng(seed)
    return [
        {"observation": rng.random((21, 4), dtype=np.float32), "action": rng.integers(0, 2, 21, dtype=np.int32),
         "core_h": rng.random(8, dtype=np.float32), "slot": np.int64(i)}
        for i in range(count)
    ]


@pytest.mark.parametrize("count", [5, 23])  # not full; wrapped round the ring (capacity 16)
def test_a_saved_replay_restores_its_unrolls_priorities_counters_and_sampling(tmp_path, count: int) -> None:
    replay = Replay(16, seed=0)
    replay.insert(array_unrolls(count), np.linspace(0.1, 3.0, count))
    ids, _, _ = replay.sample(8)
    replay.update_priorities(ids, np.full(len(ids), 5.0))
    assert replay.save(tmp_path / "replay") > 0
    assert not (tmp_path / "replay.partial").exists()

    restored = Replay(16, seed=123)  # another seed: the RNG state comes from the save
    assert restored.restore(tmp_path / "replay")
    assert (len(restored), restored.inserted, restored.sampled) == (len(replay), replay.inserted, replay.sampled)
    np.testing.assert_array_equal(restored._tree.get(np.arange(16)), replay._tree.get(np.arange(16)))
    assert replay._columns.keys() == restored._columns.keys()
    for name, mine in replay._columns.items():
        theirs = restored._columns[name]
        np.testing.assert_array_equal(mine[: len(replay)], theirs[: len(replay)])
        assert theirs.dtype == mine.dtype and theirs.shape == mine.shape
    # The same draws follow, and a new insert gets the same id in both.
    (ids, _, weights), (restored_ids, _, restored_weights) = replay.sample(8), restored.sample(8)
    np.testing.assert_array_equal(ids, restored_ids)
    np.testing.assert_array_equal(weights, restored_weights)
    assert replay.insert(array_unrolls(1, seed=9))[0] == restored.insert(array_unrolls(1, seed=9))[0]


def test_saving_streams_to_disk_without_copying_the_replay_in_memory(tmp_path) -> None:
    rng = np.random.default_rng(0)
    replay = Replay(64)
    replay.insert([{"frames": rng.integers(0, 255, (40, 4, 84, 84), dtype=np.uint8)} for _ in range(64)])  # 72 MiB
    stored = 64 * 40 * 4 * 84 * 84
    tracemalloc.start()
    written = replay.save(tmp_path / "replay")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert written >= stored
    assert peak < stored / 20  # rows go one by one into a memory-mapped file, not through a stacked copy


def test_an_insert_during_a_save_waits_so_no_saved_row_mixes_two_unrolls(tmp_path, monkeypatch) -> None:
    """An insert writes a row column by column: one landing between the save's copies of two columns would
    pair one unroll's observation with another's action. Here an insert is tried right there."""
    replay = Replay(4)
    labelled = [{"observation": np.full(3, i, np.float32), "action": np.int32(i)} for i in range(4)]
    replay.insert(labelled)  # full: the next insert replaces unroll 0
    open_memmap, opened, inserter = np.lib.format.open_memmap, [], None

    def insert_between_columns(*args, **kwargs):
        nonlocal inserter
        opened.append(args[0])
        if len(opened) == 2:  # the first column is copied; the second is next
            inserter = threading.Thread(target=replay.insert, args=([{"observation": np.full(3, 9, np.float32), "action": np.int32(9)}],))
            inserter.start()
            inserter.join(timeout=0.5)  # the save holds the replay: the insert waits for it
        return open_memmap(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "open_memmap", insert_between_columns)
    replay.save(tmp_path / "replay")
    inserter.join(timeout=10)
    assert not inserter.is_alive() and replay.inserted == 5
    observation, action = np.load(tmp_path / "replay" / "observation.npy"), np.load(tmp_path / "replay" / "action.npy")
    np.testing.assert_array_equal(observation[:, 0], action)  # every saved row is one unroll
    np.testing.assert_array_equal(action, [0, 1, 2, 3])


def test_a_replay_of_another_capacity_or_none_is_not_restored(tmp_path) -> None:
    assert not Replay(16).restore(tmp_path / "nothing")
    replay = Replay(16)
    replay.insert(array_unrolls(3))
    replay.save(tmp_path / "replay")
    other = Replay(32)
    assert not other.restore(tmp_path / "replay") and len(other) == 0


# Dies at its first rename, after moving the old copy aside, after renaming the new one into place.
@pytest.mark.parametrize("crash_at", [0, 1, 2])
def test_a_crash_while_a_save_replaces_the_previous_one_leaves_a_complete_copy_to_restore(tmp_path, monkeypatch, crash_at: int) -> None:
    """The old copy used to be deleted before the new one was renamed into place: a crash in between lost both.
    The checkpoint is written before its replay: restored with it, the copy saved with it is read, wherever the
    crash left it (the old copy used to be read where both were whole); an older checkpoint reads the old copy."""
    replay = Replay(16)
    replay.insert(array_unrolls(3))
    replay.save(tmp_path / "replay", Progress(train_steps=10, frames=300))
    replay.insert(array_unrolls(2, seed=1))
    rename, renames, rmtree = pathlib.Path.rename, [], shutil.rmtree

    def crashing_rename(self, target):
        renames.append(self)
        if len(renames) == crash_at + 1:
            raise KeyboardInterrupt  # the process dies here
        return rename(self, target)

    def crashing_rmtree(path, *args, **kwargs):
        if renames:
            raise KeyboardInterrupt
        return rmtree(path, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "rename", crashing_rename)
    monkeypatch.setattr(shutil, "rmtree", crashing_rmtree)
    with pytest.raises(KeyboardInterrupt):
        replay.save(tmp_path / "replay", Progress(train_steps=20, frames=500))
    monkeypatch.undo()
    for progress, unrolls in ((Progress(train_steps=20, frames=500), 5), (Progress(train_steps=10, frames=300), 3), (None, (3, 5))):
        restored = Replay(16)
        assert restored.restore(tmp_path / "replay", progress)
        assert len(restored) in np.atleast_1d(unrolls) and restored.inserted == len(restored)  # one whole copy


def test_a_replay_newer_than_the_checkpoint_restored_is_not_read_and_an_older_or_unstamped_one_is(tmp_path) -> None:
    """A state file rolled back to an older checkpoint: the replay saved since holds experience its weights never
    had. A crash after a checkpoint, before its replay, leaves the replay a save behind: the same run's."""
    replay = Replay(16)
    replay.insert(array_unrolls(3))
    replay.save(tmp_path / "replay", Progress(train_steps=20, frames=500))
    newer = Replay(16)
    assert not newer.restore(tmp_path / "replay", Progress(train_steps=10, frames=300)) and len(newer) == 0
    assert not Replay(16).restore(tmp_path / "replay", Progress(train_steps=20, frames=400))  # frames tell them apart
    assert Replay(16).restore(tmp_path / "replay", Progress(train_steps=30, frames=700))
    replay.save(tmp_path / "replay")  # as a replay saved before stamps existed
    assert Replay(16).restore(tmp_path / "replay", Progress(train_steps=10, frames=300))


def test_a_damaged_saved_replay_falls_back_to_a_whole_copy_else_the_learner_starts_with_an_empty_one(tmp_path) -> None:
    replay = Replay(16)
    replay.insert(array_unrolls(3))
    replay.save(tmp_path / "replay")
    shutil.copytree(tmp_path / "replay", tmp_path / "replay.old")  # as a save cut short leaves the previous copy
    (tmp_path / "replay" / "observation.npy").write_bytes(b"")  # truncated by a power loss
    restored = Replay(16)
    assert restored.restore(tmp_path / "replay") and len(restored) == 3
    shutil.rmtree(tmp_path / "replay.old")
    restored = Replay(16)
    assert not restored.restore(tmp_path / "replay")
    assert len(restored) == 0 and restored.inserted == 0
    restored.insert(array_unrolls(2))  # and it works
    assert len(restored) == 2


def test_restored_unrolls_wait_for_the_first_new_one_and_go_if_their_columns_differ(tmp_path) -> None:
    replay = Replay(16)
    replay.insert(array_unrolls(5))
    replay.save(tmp_path / "replay")
    # The run restarts with a longer unroll: the old unrolls cannot be stacked with the new ones.
    longer = [{**unroll, "observation": np.zeros((41, 4), np.float32), "action": np.zeros(41, np.int32)} for unroll in array_unrolls(2)]
    restarted = Replay(16)
    assert restarted.restore(tmp_path / "replay") and not restarted.confirmed and len(restarted) == 5
    restarted.insert(longer)
    assert restarted.confirmed and (len(restarted), restarted.inserted) == (2, 2)
    _, sampled, _ = restarted.sample(8)
    assert sampled["observation"].shape == (8, 41, 4)
    # The same run restarted: the restored unrolls stay, and the new ones follow them.
    same = Replay(16)
    assert same.restore(tmp_path / "replay")
    feed = ReplayFeed(same, asyncio.Queue(), batch_size=2, min_size=1, replay_ratio=8.0)
    assert not feed.ready()  # no training on restored unrolls before a new one has vouched for them
    same.insert(array_unrolls(2, seed=1))
    assert same.confirmed and (len(same), same.inserted) == (7, 7) and feed.ready()


async def first_batch(feed: ReplayFeed, queue: asyncio.Queue, stored: list) -> dict[str, np.ndarray]:
    """The feed's first batch once ``stored`` unrolls arrive on ``queue`` and its insert task runs."""
    for unroll in stored:
        queue.put_nowait(unroll)
    task = asyncio.create_task(feed.run())
    try:
        return await asyncio.wait_for(feed.next_batch(), 5)
    finally:
        task.cancel()


async def test_the_feed_samples_time_major_batches_with_per_unroll_columns_batch_major() -> None:
    replay = Replay(16, priority_exponent=0.0, importance_exponent=0.0, seed=0)
    queue: asyncio.Queue = asyncio.Queue()
    feed = ReplayFeed(replay, queue, batch_size=4, min_size=4, replay_ratio=8.0, per_unroll=["core_h"])
    stored = array_unrolls(6)
    batch = await first_batch(feed, queue, stored)
    assert batch["observation"].shape == (21, 4, 4) and batch["action"].shape == (21, 4)
    assert batch["core_h"].shape == (4, 8) and batch["slot"].shape == (4,)
    for i, unroll_id in enumerate(batch["ids"]):  # column i is unroll ids[i], as it went in
        np.testing.assert_array_equal(batch["observation"][:, i], stored[unroll_id]["observation"])
        np.testing.assert_array_equal(batch["core_h"][i], stored[unroll_id]["core_h"])
    np.testing.assert_array_equal(batch["weights"], np.ones(4, np.float32))  # uniform: no importance correction


def test_the_feed_holds_the_replay_ratio_on_unrolls_inserted_after_the_minimum() -> None:
    """Ratio 8, batches of 4: two batches per unroll inserted after the minimum of 4, and the first batch free.
    The warm-up fill earns nothing: counted in, it would let a fast learner take 8 batches from it alone."""
    replay = Replay(16, priority_exponent=0.0, importance_exponent=0.0, seed=0)
    feed = ReplayFeed(replay, asyncio.Queue(), batch_size=4, min_size=4, replay_ratio=8.0)
    replay.insert(unrolls(0, 1, 2))
    assert not feed.ready()  # below the minimum
    replay.insert(unrolls(3))
    assert feed.ready()
    replay.sample(4)
    assert not feed.ready()  # the fill's one batch is spent
    replay.insert(unrolls(4))
    for _ in range(2):
        assert feed.ready()
        replay.sample(4)
    assert not feed.ready() and replay.sampled == 12


async def test_a_new_replay_ratio_counts_from_now_on_and_keeps_what_was_earned() -> None:
    """Ratio 8 then 4, batches of 4: the inserts before the change keep their two batches each, those after earn
    one; raised instead, old inserts would suddenly earn more (a burst of training on old unrolls)."""
    replay = Replay(16, priority_exponent=0.0, importance_exponent=0.0, seed=0)
    feed = ReplayFeed(replay, asyncio.Queue(), batch_size=4, min_size=4, replay_ratio=8.0)
    replay.insert(unrolls(0, 1, 2, 3, 4))  # one after the minimum: 8 samples earned
    feed.set_replay_ratio(4.0)
    assert feed.replay_ratio == 4.0
    for _ in range(3):  # the free first batch, and the two earned at ratio 8
        assert feed.ready()
        replay.sample(4)
    assert not feed.ready()
    replay.insert(unrolls(5))  # 4 more at ratio 4: one batch
    assert feed.ready()
    replay.sample(4)
    assert not feed.ready()
    with pytest.raises(ValueError, match="positive"):
        feed.set_replay_ratio(0.0)


def test_replay_pacing_credits_acting_at_the_new_rate() -> None:
    from aioseed.server.trajectories.pacing import Pacing

    pacing = Pacing("replay", batch_size=4, credit=0.5, start=1.0)
    assert pacing.completed(1)  # the start spent: acting waits
    pacing.set_credit(2.0)
    pacing.trained(1)
    assert not pacing.completed(1) and pacing.completed(1)  # two unrolls per train batch now
    with pytest.raises(ValueError, match="replay mode"):
        Pacing("async", batch_size=4).set_credit(1.0)


def test_a_restored_replay_holds_the_current_ratio_from_its_counts_whatever_ratio_earned_them() -> None:
    """Ratio 0.25 over 1,000 inserts, then raised live to 8 and trained at it before the checkpoint: 4,500 samples
    of 4 per batch. The resumed learner starts at its launch ratio 0.25, which would earn 250 of them: counted so,
    it waited for ~17,000 more inserts that replay-paced acting would never send."""
    replay = Replay(2048, priority_exponent=0.0, importance_exponent=0.0, seed=0)
    replay.insert(unrolls(*range(1_000)))
    replay.sampled = 4_500  # as the checkpoint restored it
    feed = ReplayFeed(replay, asyncio.Queue(), batch_size=4, min_size=4, replay_ratio=0.25)
    assert not feed.ready()  # counted from the launch ratio
    feed.resume()
    assert feed.ready()
    replay.sample(4)
    assert not feed.ready()  # the ratio holds from here: 16 more inserts for the next batch
    replay.insert(unrolls(*range(1_000, 1_016)))
    assert feed.ready()


@pytest.mark.parametrize("given", [True, False], ids=["the-agents", "none-given"])
async def test_the_feed_inserts_new_unrolls_at_the_priorities_the_agent_gives(given: bool) -> None:
    """R2D2's new unrolls come prioritised from its inference; without (SAC, or R2D2's ``max``) they take the
    largest priority seen. With alpha = beta = 1 a sample's weight is 1 / (N p) over the batch's largest."""
    replay = Replay(16, priority_exponent=1.0, importance_exponent=1.0, seed=0)
    queue: asyncio.Queue = asyncio.Queue()
    seen: list[int] = []

    def prioritize(batch):
        seen.append(len(batch))
        return np.array([1.0 + float(unroll["slot"]) for unroll in batch]) if given else None

    feed = ReplayFeed(replay, queue, batch_size=8, min_size=6, replay_ratio=8.0, prioritize=prioritize)
    batch = await first_batch(feed, queue, array_unrolls(6))
    assert sum(seen) == 6
    priorities = 1.0 + batch["slot"].astype(np.float64) if given else np.ones(8)
    np.testing.assert_allclose(batch["weights"], priorities.min() / priorities, rtol=1e-6)
