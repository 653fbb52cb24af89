"""An env-side frame stack that starts with its episode: frames from before the start are zeros, as ale-py's
vector env fills a new stack and the learner's ``FrameStacker`` does, for the backends and the moments
where the env's own stack would carry earlier frames (EnvPool's resets; a lost life's relaunch)."""

from __future__ import annotations

import numpy as np


def since_start(since: np.ndarray, started: np.ndarray) -> np.ndarray:
    """<int64>[K] each env's frames of its current episode after one more step; ``started``: <bool>[K] the step
    began an episode (its row is the episode's first)."""
    return np.where(started, 1, since + 1)


def zero_before_start(observations: np.ndarray, since: np.ndarray, stack: int) -> np.ndarray:
    """``observations`` [K, stack, ...] with the frames that predate each env's episode zeroed (a copy where any
    is: the env's own buffer may be read-only or reused). ``since``: <int>[K] the episode's frames in the stack,
    1 on its first row."""
    stale = stack - since
    if not (stale > 0).any():
        return observations
    observations = np.array(observations)
    for env in np.flatnonzero(stale > 0):
        observations[env, : stale[env]] = 0
    return observations
