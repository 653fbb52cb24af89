"""A replay of learner-side frame stacks keeps each frame once and samples the stacks the policy saw."""

from __future__ import annotations

import numpy as np
import pytest

from aioseed.server.trajectories.replay import Replay
from tests.server.trajectories.test_frame_codec import stacked


def atari_like_unrolls(count: int, length: int = 21, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Unrolls of 4-frame stacks from the learner's stacker, with an episode start inside some of them."""
    rng = np.random.default_rng(seed)
    unrolls = []
    for i in range(count):
        starts = [bool(s) for s in rng.random(length) < 0.05]
        unrolls.append({
            "observation": stacked(starts, 4, rng, warm=i % 5),
            "reward": rng.random(length, dtype=np.float32),
            "core_h": rng.random(8, dtype=np.float32),
            "slot": np.int64(i),
        })
    return unrolls


def test_sampled_stacks_are_the_inserted_ones_at_a_quarter_of_the_bytes() -> None:
    unrolls = atari_like_unrolls(12)
    frames, plain = Replay(16, seed=0, stacked="observation"), Replay(16, seed=0)
    ids = frames.insert(unrolls)
    plain.insert(unrolls)
    sampled_ids, columns, _ = frames.sample(32)
    assert columns["observation"].shape == (32, *unrolls[0]["observation"].shape)
    for row, unroll_id in enumerate(sampled_ids):
        unroll = unrolls[int(np.flatnonzero(ids == unroll_id)[0])]
        for name, value in unroll.items():
            np.testing.assert_array_equal(columns[name][row], value)
    # [21, 4, 3, 2] uint8 stacks (6 bytes a frame, 24 a stack) -> 24 frames and 21 clears; the rest is unchanged.
    assert frames.bytes_per_step - (plain.bytes_per_step - 24) == pytest.approx((24 * 6 + 21) / 21)


def test_a_saved_replay_of_frames_restores_the_same_stacks(tmp_path) -> None:
    replay = Replay(8, seed=0, stacked="observation")
    replay.insert(atari_like_unrolls(11))  # wrapped round the ring
    replay.save(tmp_path / "replay")
    restored = Replay(8, seed=0, stacked="observation")
    assert restored.restore(tmp_path / "replay")
    (ids, mine, _), (theirs_ids, theirs, _) = replay.sample(16), restored.sample(16)
    np.testing.assert_array_equal(ids, theirs_ids)
    for name in mine:
        np.testing.assert_array_equal(mine[name], theirs[name])
