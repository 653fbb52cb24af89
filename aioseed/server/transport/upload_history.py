"""What the learner saw of one IMPALA-mode stream's uploads, slot by slot (pure NumPy).

Actors in IMPALA mode run the policy and send whole unrolls, with the returns of the episodes that
ended in them. The learner takes neither those figures nor the unrolls' continuity on trust:

  * episode returns and lengths are summed from the steps' own rewards and done/phantom flags,
    carried across a slot's unrolls, with EnvTable's conventions: a row after a phantom (final)
    row starts an episode and is not counted; an episode ends on a phantom row, or on a done row
    that does not follow one (SEED's convention: a terminated row that already carries the next
    episode's first observation). An episode already running when the stream connected is not
    reported, since its start was not seen;
  * a slot's step 0 must repeat its previous unroll's last step, and a phantom row must be
    followed by a done row (the discount into the next episode's first observation is zero).

Each new step (1..T) is counted once; step 0 repeats what the previous unroll counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

import numpy as np

from aioseed.server.transport.protocol import ProtocolError


@dataclasses.dataclass
class _Running:
    """A slot's episode in progress."""

    episode_return: float = 0.0
    length: int = 0
    whole: bool = False
    """Its start was seen on this stream (else it is not reported when it ends)."""


class UploadHistory:
    """Verbs: ``check`` a message's unrolls against the slots' history, then ``episodes`` to take them in."""

    def __init__(self, per_unroll: Collection[str]) -> None:
        """``per_unroll``: the columns that hold the first step only (recurrent state), not compared."""
        self._per_unroll = frozenset(per_unroll)
        self._last: dict[int, dict[str, np.ndarray]] = {}
        self._running: dict[int, _Running] = {}

    def check(self, slots: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
        """Raises ProtocolError if a slot's step 0 differs from its previous unroll's last step, or a
        phantom row is not followed by a done row."""
        phantom, done = arrays["phantom"], arrays["done"]
        broken = phantom[:, :-1] & ~done[:, 1:]
        if broken.any():
            unroll, step = (int(i) for i in np.argwhere(broken)[0])
            raise ProtocolError(f"unroll {unroll}: step {step} is final (phantom) but step {step + 1} is not done")
        for i, slot in enumerate(slots.tolist()):
            last = self._last.get(slot)
            if last is None:
                continue
            differs = [name for name, value in last.items() if not np.array_equal(arrays[name][i, 0], value)]
            if differs:
                raise ProtocolError(f"unroll {i} (slot {slot}): step 0 must repeat the previous unroll's last step; {differs[:4]} differ")

    def episodes(self, slots: np.ndarray, arrays: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """Takes in checked unrolls; returns the returns <float64>[E] and lengths <int64>[E] of the
        episodes that ended in them and whose start this stream saw."""
        returns: list[float] = []
        lengths: list[int] = []
        reward, done, phantom = arrays["reward"], arrays["done"], arrays["phantom"]
        for i, slot in enumerate(slots.tolist()):
            self._last[slot] = {name: array[i, -1].copy() for name, array in arrays.items() if name not in self._per_unroll}
            # A first step that ends an episode (final, or done) means the next one is seen from its start.
            running = self._running.setdefault(slot, _Running(whole=bool(phantom[i, 0] or done[i, 0])))
            counted = ~phantom[i, :-1]
            rewards = np.where(counted, reward[i, 1:], 0.0).astype(np.float64)
            start = 0
            for end in np.flatnonzero(counted & (phantom[i, 1:] | done[i, 1:])).tolist():
                running.episode_return += float(rewards[start : end + 1].sum())
                running.length += int(counted[start : end + 1].sum())
                if running.whole:
                    returns.append(running.episode_return)
                    lengths.append(running.length)
                running.episode_return, running.length, running.whole = 0.0, 0, True
                start = end + 1
            running.episode_return += float(rewards[start:].sum())
            running.length += int(counted[start:].sum())
        return np.asarray(returns, np.float64), np.asarray(lengths, np.int64)
