"""Stacked frames stored once: every stack the learner's stacker makes comes back exactly, and anything
else is refused rather than stored as something else."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aioseed.server.acting.frame_stack import FrameStacker
from aioseed.server.trajectories.frame_codec import NotFrameStacks, decode, encode


def stacked(starts: list[bool], depth: int, rng: np.random.Generator, warm: int) -> np.ndarray:
    """The stacks of one slot over ``len(starts)`` steps after ``warm`` earlier ones (an unroll mid-episode),
    from the learner's own stacker; frames are random and never all zero."""
    stacker = FrameStacker(depth)
    slot = np.zeros(1, np.int32)
    out = []
    for step, start in enumerate([True] + [False] * warm + starts):
        frame = rng.integers(1, 256, (1, 1, 3, 2), dtype=np.uint8)
        stacks = stacker.push(slot, frame, np.array([start]))
        if step > warm:
            out.append(stacks[0])
    return np.stack(out)


@settings(max_examples=200, deadline=None)
@given(
    starts=st.lists(st.booleans(), min_size=1, max_size=40),
    depth=st.integers(2, 5),
    warm=st.integers(0, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_stackers_stacks_come_back_exactly(starts: list[bool], depth: int, warm: int, seed: int) -> None:
    stacks = stacked(starts, depth, np.random.default_rng(seed), warm)
    frames, clears = encode(stacks)
    assert len(frames) == len(stacks) + depth - 1 and clears.shape == (len(stacks),)
    np.testing.assert_array_equal(decode(frames[None], clears[None], depth)[0], stacks)


def test_a_batch_decodes_each_unroll_with_its_own_clears() -> None:
    rng = np.random.default_rng(0)
    unrolls = [stacked(starts, 4, rng, warm) for starts, warm in (([False] * 9 + [True], 0), ([False, True] + [False] * 8, 3), ([False] * 10, 1))]
    encoded = [encode(u) for u in unrolls]
    frames, clears = np.stack([f for f, _ in encoded]), np.stack([c for _, c in encoded])
    np.testing.assert_array_equal(decode(frames, clears, 4), np.stack(unrolls))
    assert clears.sum(axis=1).tolist() == [1, 1, 0]  # one clear where an episode started inside the unroll


@settings(max_examples=200, deadline=None)
@given(arrays=st.integers(0, 2**32 - 1), length=st.integers(1, 8), depth=st.integers(2, 4))
def test_anything_else_is_refused_or_stored_exactly(arrays: int, length: int, depth: int) -> None:
    rng = np.random.default_rng(arrays)
    stacks = rng.integers(0, 2, (length, depth, 2), dtype=np.uint8)  # small values: some happen to be valid stacks
    try:
        frames, clears = encode(stacks)
    except NotFrameStacks:
        return
    np.testing.assert_array_equal(decode(frames[None], clears[None], depth)[0], stacks)


def test_stacks_with_no_depth_are_refused() -> None:
    with pytest.raises(NotFrameStacks, match="depth >= 2"):
        encode(np.zeros((5, 1, 3), np.uint8))
