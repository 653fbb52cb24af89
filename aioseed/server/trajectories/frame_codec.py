"""Stacked frames stored once (pure NumPy): an unroll's ``[L, depth, *frame]`` stacks as ``L + depth - 1`` frames.

The learner's stacker (``aioseed.server.acting.frame_stack``) pushes one frame per step and clears a slot's
stack to zeros where an episode starts, so step t's stack is the frames pushed at steps t - depth + 1 .. t,
zeros for those before the latest clear. An unroll therefore keeps its first stack whole, then each later
step's newest frame, and a flag per step where the stack was cleared (``clears``): 4x less memory for
Atari's stacks of four, as DQN Zoo and Dopamine store them. ``decode`` rebuilds every stack exactly;
``encode`` refuses stacks that are not such a sequence rather than store something else.
"""

from __future__ import annotations

import numpy as np


class NotFrameStacks(ValueError):
    """Stacks that no sequence of pushes and clears produced."""


def encode(stacks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``stacks[L, depth, *frame]`` -> (``frames[L + depth - 1, *frame]``, ``clears <bool>[L]``)."""
    if stacks.ndim < 2 or len(stacks) == 0 or stacks.shape[1] < 2:
        raise NotFrameStacks(f"expected stacks [L >= 1, depth >= 2, ...], got {stacks.shape}")
    flat = stacks.reshape(len(stacks), stacks.shape[1], -1)
    shifted = (flat[1:, :-1] == flat[:-1, 1:]).all(axis=(1, 2))  # step t's older frames are t - 1's newer ones
    clears = np.concatenate([[False], ~shifted])
    if not (flat[clears, :-1] == 0).all():  # where the stack did not shift, it must have been cleared
        bad = np.flatnonzero(clears & (flat[:, :-1] != 0).any(axis=(1, 2)))
        raise NotFrameStacks(f"the stacks at steps {bad[:5].tolist()} neither follow the step before nor start from zeros")
    frames = np.concatenate([stacks[0], stacks[1:, -1]])
    return frames, clears


def decode(frames: np.ndarray, clears: np.ndarray, depth: int) -> np.ndarray:
    """``encode``'s inverse over a batch: ``frames[B, L + depth - 1, *frame]``, ``clears[B, L]`` ->
    ``stacks[B, L, depth, *frame]``."""
    batch, length = clears.shape
    steps = np.arange(length)[:, None]
    position = np.arange(depth)[None, :]
    pushed = steps - (depth - 1) + position  # [L, depth]: the step whose frame sits at each position
    # The latest clear at or before each step (-depth when there is none: every pushed frame is kept).
    latest = np.maximum.accumulate(np.where(clears, np.arange(length), -depth), axis=1)  # [B, L]
    stacks = frames[:, steps + position]  # [B, L, depth, *frame]
    stacks[pushed[None] < latest[:, :, None]] = 0
    return stacks

