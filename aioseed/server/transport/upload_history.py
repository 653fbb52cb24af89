"""What the learner saw of one IMPALA-mode stream's uploads, slot by slot (pure NumPy).

Actors in IMPALA mode run the policy and send whole unrolls, with the returns of the episodes that
ended in them. The learner takes neither those figures nor the unrolls' continuity on trust:

  * episode returns and lengths are summed from the steps' own rewards and done/phantom flags,
    carried across a slot's unrolls, with EnvTable's conventions: a row after a phantom (final)
    row starts an episode and is not counted; an episode ends on a phantom row, or on a done row
    that does not follow one (SEED's convention: a terminated row that already carries the next
    episode's first observation). An episode already running when the stream connected is not
    reported, since its start was not seen. A first connection's envs have just reset (its hello names no
    previous slots): their first unroll starts an episode;
  * a slot's step 0 must repeat its previous unroll's last step, and a phantom row must be
    followed by a done row (the discount into the next episode's first observation is zero).

Each new step (1..T) is counted once; step 0 repeats what the previous unroll counted.

The history is the learner's, kept per slot across streams: an actor that reconnects and gets its slots back
(same run ids) carries on its episodes, and the upload it sends again because its Accepted answer was lost
with the old stream is recognised by its digest, acknowledged and not queued or counted twice. Nothing is
written until the upload is queued (``commit``): a refused or cut-off upload leaves no trace.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Collection, Sequence

import numpy as np

from aioseed.server.transport.protocol import ProtocolError


@dataclasses.dataclass(frozen=True)
class _Slot:
    """What the learner has taken in of one slot's env."""

    run_id: int
    """The env's run id (a slot handed to another env starts afresh)."""
    last: dict[str, np.ndarray] | None = None
    """The last step of its last accepted unroll (the next one's step 0 must repeat it)."""
    digest: bytes = b""
    """Of its last accepted unroll, whole (an upload sent again is recognised by it)."""
    episode_return: float = 0.0
    length: int = 0
    whole: bool = False
    """The running episode's start was seen (else it is not reported when it ends); decided by its first unroll."""
    reset: bool = False
    """Its env had just reset when the slot was adopted (a first connection): its first unroll starts an episode."""


@dataclasses.dataclass(frozen=True)
class Taken:
    """One unroll's slot state once it is queued (``UploadHistory.commit``), and what it adds."""

    slot: int
    state: _Slot
    env_steps: int
    """Its new env steps: 1..T whose action ran (step 0 repeats the previous unroll's last)."""
    returns: list[float]
    """The episodes that ended in it and whose start was seen"""
    lengths: list[int]
    partial: int = 0
    """The episode that ended in it unseen from its start (0 or 1): counted, never reported."""


def digests(arrays: dict[str, np.ndarray]) -> list[bytes]:
    """One digest per unroll (row) of the columns ``arrays``, over every column's bytes."""
    count = len(arrays["done"])
    out = []
    for i in range(count):
        hasher = hashlib.blake2b(digest_size=16)
        for name in sorted(arrays):
            hasher.update(name.encode())
            hasher.update(np.ascontiguousarray(arrays[name][i]).data)
        out.append(hasher.digest())
    return out


class UploadHistory:
    """Verbs: ``adopt`` a stream's slots; for each upload ``repeated``, ``check``, ``take`` (pure), and once it is
    queued ``commit``."""

    def __init__(self, per_unroll: Collection[str]) -> None:
        """``per_unroll``: the columns that hold the first step only (recurrent state), not compared."""
        self._per_unroll = frozenset(per_unroll)
        self._slots: dict[int, _Slot] = {}

    def adopt(self, slots: Sequence[int], run_ids: Sequence[int], reconnected: bool) -> None:
        """A stream now holds ``slots`` for the envs ``run_ids``: a slot that served another env starts afresh.
        ``reconnected``: its envs play on (the hello named previous slots), else they have just reset. What an env
        left on a slot it no longer holds is dropped: handed that slot back later, it would be stale."""
        held = dict(zip((int(s) for s in slots), (int(r) for r in run_ids), strict=True))
        moved = set(held.values())
        for slot in [slot for slot, known in self._slots.items() if known.run_id in moved and held.get(slot) != known.run_id]:
            del self._slots[slot]
        for slot, run_id in zip(slots, run_ids, strict=True):
            known = self._slots.get(int(slot))
            if known is None or known.run_id != int(run_id):
                self._slots[int(slot)] = _Slot(int(run_id), reset=not reconnected)

    def _slot(self, slot: int) -> _Slot:
        return self._slots.get(slot) or _Slot(-1)

    def repeated(self, slots: np.ndarray, sent: list[bytes]) -> np.ndarray:
        """<bool>[K] which slots' unrolls are, byte for byte, the last one accepted for the slot (sent again after a
        reconnect, their Accepted answer lost with the old stream)."""
        return np.array([self._slot(slot).digest == digest for slot, digest in zip(slots.tolist(), sent)], bool)

    def check(self, slots: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
        """Raises ProtocolError if a slot's step 0 differs from its previous unroll's last step, or a
        phantom row is not followed by a done row."""
        phantom, done = arrays["phantom"], arrays["done"]
        broken = phantom[:, :-1] & ~done[:, 1:]
        if broken.any():
            unroll, step = (int(i) for i in np.argwhere(broken)[0])
            raise ProtocolError(f"unroll {unroll}: step {step} is final (phantom) but step {step + 1} is not done")
        for i, slot in enumerate(slots.tolist()):
            last = self._slot(slot).last
            if last is None:
                continue
            differs = [name for name, value in last.items() if not np.array_equal(arrays[name][i, 0], value)]
            if differs:
                raise ProtocolError(f"unroll {i} (slot {slot}): step 0 must repeat the previous unroll's last step; {differs[:4]} differ")

    def take(self, slots: np.ndarray, arrays: dict[str, np.ndarray], sent: list[bytes]) -> list[Taken]:
        """Per checked unroll: its slot's state after it, and the returns and lengths of the episodes that ended in
        it and whose start was seen. Nothing is written (``commit``)."""
        reward, done, phantom = arrays["reward"], arrays["done"], arrays["phantom"]
        out = []
        for i, slot in enumerate(slots.tolist()):
            state = self._slot(slot)
            # A first unroll starts on a reset, or on a step that ends an episode (final, or done): the next one is
            # seen from its start.
            whole = state.whole if state.last is not None else bool(state.reset or phantom[i, 0] or done[i, 0])
            episode_return, length = state.episode_return, state.length
            returns: list[float] = []
            lengths: list[int] = []
            counted = ~phantom[i, :-1]
            rewards = np.where(counted, reward[i, 1:], 0.0).astype(np.float64)
            start, partial = 0, 0
            for end in np.flatnonzero(counted & (phantom[i, 1:] | done[i, 1:])).tolist():
                episode_return += float(rewards[start : end + 1].sum())
                length += int(counted[start : end + 1].sum())
                if whole:
                    returns.append(episode_return)
                    lengths.append(length)
                else:
                    partial += 1
                episode_return, length, whole = 0.0, 0, True
                start = end + 1
            last = {name: array[i, -1].copy() for name, array in arrays.items() if name not in self._per_unroll}
            after = _Slot(
                run_id=state.run_id, last=last, digest=sent[i], episode_return=episode_return + float(rewards[start:].sum()),
                length=length + int(counted[start:].sum()), whole=whole,
            )
            out.append(
                Taken(slot=slot, state=after, env_steps=int((~phantom[i, 1:]).sum()), returns=returns, lengths=lengths, partial=partial)
            )
        return out

    def commit(self, taken: Taken) -> None:
        """The unroll ``taken`` describes is queued: its slot's state becomes the history."""
        self._slots[taken.slot] = taken.state
