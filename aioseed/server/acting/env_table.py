"""Per-env state the learner keeps for every slot (pure NumPy).

It turns the wire's done flags into what trajectories need:
  * ``done``: the transition into this row crosses an episode boundary, so its
    discount is zero (a termination, or the reset row after a final row);
  * ``phantom``: the row carries an episode's final observation (FINAL, or
    TRUNCATED, which always comes with the final observation). Its action is
    never executed; it exists so that the previous step can bootstrap from
    V(final observation) after a truncation. The loss gives it zero weight.
A TERMINATED row without FINAL follows SEED's convention instead: it carries
the first observation of the next episode, which is not a phantom.
A LIFE_LOST row (with FINAL | TERMINATED) ends the training episode the same
way, but the game's return and length go on: the row after it is counted, and
the episode ends (for the returns) at the game's own termination or truncation.
A row whose run_id differs from the stored one starts a new run: its state is
reset. The first row after a (re)connection is also ``fresh``: it starts a new
unroll and its reward is not counted, since it may have been seen already.
A run's first row is its env's reset row when its stream is a first connection.
After a reconnection the envs play on: where the learner meets a run it has not
seen in that slot (it restarted since, or granted another slot), the episode
began unseen, and its return and length would be a part of the game's. That
episode is counted as partial and never reported; the next one is whole.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from aioseed.server.acting.core_states import grown
from aioseed.types import FINAL, LIFE_LOST, TERMINATED, TRUNCATED


@dataclasses.dataclass
class EpisodeBoundaries:
    """Episode bookkeeping ``EnvTable.observe`` derived for one batch of rows: where episodes and
    unrolls start and end, and the episodes that ended (not the observations themselves)."""

    fresh: np.ndarray
    """<bool>[B] the row starts a new unroll (new run_id or reconnection)."""
    done: np.ndarray
    """<bool>[B] the discount into this row is zero."""
    phantom: np.ndarray
    """<bool>[B] the row is an episode's final observation; its action is not executed."""
    episode_returns: np.ndarray
    """<float64>[E] returns of the episodes that ended in this batch."""
    episode_lengths: np.ndarray
    """<int64>[E] their lengths in env steps."""
    ended_rows: np.ndarray
    """<int64>[E] the batch rows those episodes ended on."""
    env_steps: int
    """Env steps represented by this batch (rows whose action will be executed)."""
    partial_rows: np.ndarray
    """<int64>[P] the batch rows that ended episodes begun before the learner saw their run (not reported)."""

    @property
    def starts(self) -> np.ndarray:
        """<bool>[B] the row starts an episode or a fresh unroll: frame stacks and recurrent state restart."""
        return (self.done & ~self.phantom) | self.fresh


_NO_RETURNS = np.zeros(0, np.float64)
_NO_LENGTHS = np.zeros(0, np.int64)
_NO_ROWS = _NO_LENGTHS


class EnvTable:
    """Verbs: ``observe`` a batch of rows, ``forget`` slots on disconnect."""

    def __init__(self) -> None:
        self._capacity = 0
        self._run_id = np.zeros(0, np.uint64)
        self._fresh = np.zeros(0, bool)
        self._after_final = np.zeros(0, bool)
        self._after_life_lost = np.zeros(0, bool)
        self._return = np.zeros(0, np.float64)
        self._length = np.zeros(0, np.int64)
        self._partial = np.zeros(0, bool)
        self._grow(16)

    def observe(
        self, slots: np.ndarray, run_ids: np.ndarray, rewards: np.ndarray, flags: np.ndarray, reconnected: np.ndarray | None = None
    ) -> EpisodeBoundaries:
        """``reconnected``: <bool>[B] rows of a stream that reconnected, whose envs played on (``Rows``); None: none."""
        self._ensure(int(slots.max()) if len(slots) else 0)
        new_run = self._run_id[slots] != run_ids
        if not (flags.any() or new_run.any() or self._fresh[slots].any() or self._after_final[slots].any()):
            # The common case, rows in the middle of episodes: counters only.
            self._return[slots] += rewards
            self._length[slots] += 1
            plain = np.zeros(len(slots), bool)
            return EpisodeBoundaries(
                fresh=plain, done=plain, phantom=plain, episode_returns=_NO_RETURNS, episode_lengths=_NO_LENGTHS,
                ended_rows=_NO_ROWS, env_steps=len(slots), partial_rows=_NO_ROWS,
            )
        fresh = self._fresh[slots] | new_run
        self._run_id[slots] = run_ids
        self._fresh[slots] = False
        new_slots = slots[new_run]
        self._return[new_slots] = 0.0
        self._length[new_slots] = 0
        self._partial[new_slots] = False if reconnected is None else reconnected[new_run]

        terminated = (flags & TERMINATED) != 0
        truncated = (flags & TRUNCATED) != 0
        final = ((flags & FINAL) != 0) | (truncated & ~terminated)
        life_lost = (flags & LIFE_LOST) != 0
        after_final = self._after_final[slots] & ~fresh
        game_goes_on = self._after_life_lost[slots] & ~fresh
        self._after_final[slots] = final
        self._after_life_lost[slots] = life_lost
        counted = ~fresh & (~after_final | game_goes_on)
        self._return[slots] += np.where(counted, rewards, 0.0)
        self._length[slots] += counted
        ending = np.flatnonzero((terminated | truncated) & counted & ~life_lost)
        ending_slots = slots[ending]
        partial = self._partial[ending_slots]
        ended_rows, partial_rows = ending[~partial], ending[partial]
        ended = slots[ended_rows]
        episode_returns = self._return[ended].copy()
        episode_lengths = self._length[ended].copy()
        self._return[ending_slots] = 0.0
        self._length[ending_slots] = 0
        self._partial[ending_slots] = False
        # An episode's end resent after a reconnect (fresh): the learner may have counted it before the stream
        # failed, or not; it is dropped, and its rewards must not run on into the next episode.
        dropped = slots[(terminated | truncated) & fresh & ~life_lost]
        self._return[dropped] = 0.0
        self._length[dropped] = 0
        self._partial[dropped] = False
        return EpisodeBoundaries(
            fresh=fresh,
            done=(terminated | after_final) & ~fresh,
            phantom=final,
            episode_returns=episode_returns,
            episode_lengths=episode_lengths,
            ended_rows=ended_rows,
            env_steps=int(len(slots) - final.sum()),  # a relaunch after a lost life counts as a reset does: not at all
            partial_rows=partial_rows,
        )

    def forget(self, slots: np.ndarray) -> None:
        """Marks ``slots`` so that their next row starts a fresh unroll."""
        self._ensure(int(slots.max()) if len(slots) else 0)
        self._fresh[slots] = True

    def _ensure(self, max_slot: int) -> None:
        if max_slot >= self._capacity:
            self._grow(max(2 * self._capacity, max_slot + 1))

    def _grow(self, capacity: int) -> None:
        self._run_id = grown(self._run_id, capacity)
        self._fresh = grown(self._fresh, capacity)
        self._after_final = grown(self._after_final, capacity)
        self._after_life_lost = grown(self._after_life_lost, capacity)
        self._return = grown(self._return, capacity)
        self._length = grown(self._length, capacity)
        self._partial = grown(self._partial, capacity)
        self._capacity = capacity
