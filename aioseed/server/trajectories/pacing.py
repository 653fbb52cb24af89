"""How far acting may run ahead of training: a mode, counted in completed unrolls (pure asyncio).

- ``async`` (SEED's default): acting runs on while the learner trains, held back only by the
  bounded unroll queue. The policy lag is whatever the queues hold.
- ``bounded``: acting may complete at most ``lag_bound`` train batches (default one) beyond the one being
  trained, so it overlaps training (which suits a GPU learner) and the lag stays at most ``lag_bound`` + 1
  batches of updates.
- ``synchronous``: acting stops from the moment a train batch is complete until its update has
  applied, as in PPO, so every step of a train batch was acted by the policy that computes its
  targets (the proximal one). An env whose unroll is complete waits too, even while others still
  act the batch's last steps (``defers``). So does one in bounded mode whose unroll completes the batch
  ahead: its next steps belong to the batch after, whose policy is the update of the one training now.
- ``replay`` (off-policy agents that train from replay): each train batch lets acting complete
  ``credit`` more unrolls (batch size / replay ratio) beyond a start of ``start`` (set by the learner
  from the replay's minimum size and how far acting may run ahead), so that updates per env step
  hold the replay ratio however fast the actors are. Off-policy steps need no redo: a waiting batch
  is answered as it was acted.

When acting must wait, the inference batch that made it wait is answered only after the update,
with actions the updated policy chooses again (``Acting.redo``): its rows are the first steps of
the next unrolls, which would otherwise carry the old policy's actions into the next batch. So is
a batch whose policy started before the latest update and finished after it (``stale``): acting
did not have to wait for that update, but the batch's rows would count as acted before it.

The mode may change while a run trains (``switch``: a live setting); the backlog of a switch from async to an
on-policy mode is trained before acting goes on.

The inference loop asks ``ready`` before each batch and reports ``completed`` unrolls after it;
the trainer reports ``trained`` after each train batch, with the version its updates reached.
"""

from __future__ import annotations

import asyncio
import math
from typing import Literal

ActingMode = Literal["async", "bounded", "synchronous", "replay"]


class Pacing:
    """Verbs: ``ready`` (wait until acting may go on), ``completed`` unrolls, ``trained`` a batch, ``updated``
    (wait for the next train batch to apply), ``stale`` (a batch acted before the latest update), ``resume``
    (a restored run's counts)."""

    def __init__(
        self, mode: ActingMode, batch_size: int, credit: float | None = None, start: float | None = None, lag_bound: int = 1
    ) -> None:
        """``batch_size``: unrolls per train batch. ``credit`` unrolls more per train batch after ``start``: replay
        mode's (required there, and for a switch to it); ``lag_bound``: bounded mode's train batches ahead."""
        if credit is not None and not (credit > 0 and start is not None):
            raise ValueError("replay pacing needs a positive credit per train batch and a start")
        self._batch_size = batch_size
        self._replay_credit = credit
        self._replay_start = start
        self._completed = 0
        """Unrolls completed since the learner started, in every mode (``switch`` counts the backlog from it)."""
        self._open = asyncio.Event()
        self._trained_version = 0
        """The parameter version when the latest train batch's updates had applied."""
        self._updates = 0
        """Train batches whose updates have applied."""
        self._updated = asyncio.Event()
        """Set by each ``trained``, then replaced: ``updated`` waits on it."""
        self.mode: ActingMode = "async"
        self.lag_bound = lag_bound
        self._credit: float = batch_size
        self._start: float = math.inf
        self._allowance: float = math.inf
        """Unrolls acting may still complete before it must wait for an update."""
        self.switch(mode, lag_bound)

    def switch(self, mode: ActingMode, lag_bound: int = 1) -> None:
        """Paces acting in ``mode`` from now on (a live change; the constructor's first). An on-policy mode counts
        the unrolls completed but not yet trained against its allowance, so acting waits until training has taken
        the backlog async acting left in the queues, and the lag holds from then on. Replay mode starts from its
        start; ``resume`` then counts what the replay already holds."""
        if mode not in ("async", "bounded", "synchronous", "replay"):
            raise ValueError(f"unknown acting mode {mode!r}; known: async, bounded, synchronous, replay")
        if lag_bound < 1:
            raise ValueError(f"lag_bound must be >= 1 train batch, got {lag_bound}")
        if mode == "replay" and (self._replay_credit is None or self._replay_start is None):
            raise ValueError("replay pacing needs a positive credit per train batch and a start")
        self.mode, self.lag_bound = mode, lag_bound
        starts = {"async": math.inf, "bounded": (lag_bound + 1) * self._batch_size, "synchronous": self._batch_size}
        self._start = self._replay_start if mode == "replay" else starts[mode]  # type: ignore[assignment]
        self._credit = self._replay_credit if mode == "replay" else self._batch_size  # type: ignore[assignment]
        backlog = 0 if mode in ("async", "replay") else max(0, self._completed - self._updates * self._batch_size)
        self._allowance = self._start - backlog
        if self._allowance > 0:
            self._open.set()
        else:
            self._open.clear()

    @property
    def paced(self) -> bool:
        """Acting waits for training (bounded, synchronous or replay), so batches are judged one at a time."""
        return self.mode != "async"

    @property
    def redoes(self) -> bool:
        """A batch that waited for an update is acted again by the updated policy (on-policy modes)."""
        return self.mode in ("bounded", "synchronous")

    def defers(self) -> bool:
        """Whether the batch just counted, having completed unrolls, waits for the next update although acting
        goes on: its envs completed unrolls of the last train batch acting may run to (each one in synchronous
        mode, the one ahead in bounded mode), so their next steps belong to a batch whose policy is that update's."""
        return self.redoes and self._allowance < self._batch_size

    @property
    def updates(self) -> int:
        """Train batches whose updates have applied (``updated``'s argument)."""
        return self._updates

    async def updated(self, since: int) -> None:
        """Returns once more than ``since`` train batches have applied."""
        while self._updates <= since:
            await self._updated.wait()

    @property
    def allowance(self) -> float:
        """Unrolls acting may still complete (inf in async mode; negative after an overshoot)."""
        return self._allowance

    async def ready(self) -> None:
        """Returns once acting may start another inference batch."""
        while not self._open.is_set():
            await self._open.wait()

    def completed(self, unrolls: int) -> bool:
        """Counts unrolls an inference batch completed; True when acting must now wait for an update."""
        self._completed += unrolls
        if unrolls and self.paced:
            self._allowance -= unrolls
            if self._allowance <= 0:
                self._open.clear()
                return True
        return False

    def trained(self, version: int) -> None:
        """A train batch's updates have applied, bringing the parameters to ``version``: acting may
        complete one more batch of unrolls."""
        self._trained_version = version
        if self.paced:
            self._allowance += self._credit
            if self._allowance > 0:
                self._open.set()
        self._updates += 1
        updated, self._updated = self._updated, asyncio.Event()
        updated.set()

    def set_credit(self, credit: float) -> None:
        """Replay mode's pacing: each train batch from now on lets acting complete ``credit`` more unrolls (a new
        replay ratio), now or after a switch to it."""
        if self._replay_credit is None or not credit > 0:
            raise ValueError(f"a positive credit paces replay mode only (it was given none; credit {credit})")
        self._replay_credit = credit
        if self.mode == "replay":
            self._credit = credit

    def resume(self, completed: int, trained: float) -> None:
        """Replay mode: carries on the count of a restored run, whose replay kept ``completed`` unrolls inserted
        and ``trained`` train batches sampled from it, as if it had never stopped (otherwise acting would get
        the replay's minimum size again on every restart, and run that far ahead of the replay ratio). The
        other modes start afresh: their queues are not checkpointed.

        Acting always gets at least one train batch's credit: a restored replay trains only after a new unroll
        has confirmed its layout (``Replay.confirmed``), so a run stopped while acting waited for training would
        otherwise wait forever. What acting had run ahead beyond that is forgiven."""
        if self.mode != "replay":
            return
        self._allowance = max(self._credit, min(self._start, self._start + trained * self._credit - completed))
        self._open.set()

    def stale(self, version: int) -> bool:
        """Whether steps acted at ``version`` predate the latest train batch's updates (on-policy paced modes only),
        so that acting would run further ahead of training than its mode allows."""
        return self.redoes and version < self._trained_version
