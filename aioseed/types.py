"""The records of the data path, defined once: wire flags, rows, steps, unrolls and train batches.

actor --Steps message--> ``Rows`` (one message, B = K envs) --batcher--> ``Rows`` (one
inference batch) --inference--> a ``Step`` per row --unroll store--> ``Unroll`` per env
--source--> ``TrainBatch`` --train step--> new parameters.

Records are dicts of NumPy arrays (TypedDicts where the keys are fixed), so that
the batcher, the unroll store and the replay handle every column alike. Shape
comments use B rows, T steps per unroll (an unroll holds T + 1) and ``obs``
for the observation shape the policy sees.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

import numpy as np

Column = tuple[tuple[int, ...], Any]
"""A per-row column of a step or unroll: (shape of one row's value, NumPy dtype)."""

# Row flags on the wire (``Steps.flags``, one byte per row) and in the learner's per-env bookkeeping.
TERMINATED = 1
"""The episode ended in a terminal state: no bootstrap."""
TRUNCATED = 2
"""The episode was cut (time limit): bootstrap from the final observation, which the row carries."""
FINAL = 4
"""The row carries the episode's final observation (gymnasium's next-step autoreset); its action is not run."""
LIFE_LOST = 8
"""With FINAL | TERMINATED: a lost life ends the training episode but not the game (``--atari.episodic-life``);
the episode's return goes on counting into the next row, whose observation follows the relaunch."""
VALID_FLAG_BYTES = bytes(
    [0, TERMINATED, TRUNCATED, TERMINATED | TRUNCATED, FINAL | TERMINATED, FINAL | TRUNCATED, FINAL | TERMINATED | TRUNCATED,
     LIFE_LOST | FINAL | TERMINATED]
)
"""Flag bytes a row may carry: terminated and truncated in any combination, FINAL only with one of them,
LIFE_LOST only with FINAL | TERMINATED."""


class Rows(TypedDict):
    """Env rows awaiting actions: one ``Steps`` message as parsed, or an inference batch of them."""

    slot: np.ndarray
    """<int32>[B] the env slot of each row."""
    run_id: np.ndarray
    """<uint64>[B] the env's episode-stream id; a new one means a fresh env (its history is dropped)."""
    reward: np.ndarray
    """<float32>[B] the reward of the step that led to this row."""
    flags: np.ndarray
    """<uint8>[B] TERMINATED | TRUNCATED | FINAL | LIFE_LOST bits."""
    observation: np.ndarray
    """<spec dtype>[B, *wire obs] the observation as the actor sent it (one frame with learner-side stacking)."""
    evaluation: np.ndarray
    """<bool>[B] rows of evaluation envs: acted on greedily, never trained on."""
    reconnected: NotRequired[np.ndarray]
    """<bool>[B] rows of a stream that reconnected (its hello named previous slots), whose envs played on: an
    episode the learner meets mid-way is partial and not reported (``EnvTable``). Absent: none."""
    right: NotRequired[np.ndarray]
    """<bool>[B] rows of right-side players (Football with ``--football.right-players``; absent: none): their
    episodes' returns are reported apart (the left side's ``charts/return``, theirs ``charts/return_right``)."""


ENV_ACTION = "env_action"
"""A policy output naming what the env runs, where that differs from the stored ``action`` (a tanh-squashed
Gaussian's action in its box, whose pre-squash sample the unrolls keep); not kept in unrolls."""


def env_actions(outputs: dict[str, np.ndarray]) -> np.ndarray:
    """What the envs of a batch of policy outputs run: ``ENV_ACTION`` where the policy gives one, else ``action``."""
    return outputs.get(ENV_ACTION, outputs["action"])


class Step(TypedDict):
    """One step per row as the unroll store keeps it; the agent adds its outputs (``action``,
    ``logits``...) and the recurrent state the step started from."""

    observation: np.ndarray
    """<spec dtype>[B, *obs] as the policy saw it."""
    reward: np.ndarray
    """<float32>[B] the reward that led here (0 where an episode starts)."""
    done: np.ndarray
    """<bool>[B] the transition into this step crosses an episode boundary: its discount is zero."""
    phantom: np.ndarray
    """<bool>[B] a final observation whose action is never run: it bootstraps a truncated episode only."""
    version: np.ndarray
    """<int64>[B] the parameter version that chose the action."""


def step_columns(observation_shape: tuple[int, ...], observation_dtype: Any) -> dict[str, Column]:
    """``Step``'s columns for the unroll store: name -> (shape of one row's value, dtype)."""
    return {
        "observation": (observation_shape, observation_dtype),
        "reward": ((), np.float32),
        "done": ((), bool),
        "phantom": ((), bool),
        "version": ((), np.int64),
    }


Unroll = dict[str, np.ndarray]
"""One env's T + 1 consecutive ``Step`` rows, each column ``[T + 1, ...]`` (the agent's per-unroll
state columns ``[...]``), plus ``slot`` (<int32>[])."""

TrainBatch = dict[str, np.ndarray]
"""B unrolls, time-major: each ``Unroll`` column becomes ``[T + 1, B, ...]`` (``slot`` and per-unroll
columns ``[B, ...]``); R2D2's adds ``ids`` and ``weights`` (<float32>[B])."""
