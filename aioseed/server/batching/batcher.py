"""Deadline-based dynamic batching of env rows (pure asyncio + NumPy).

Streams ``submit`` groups of rows; the inference loop ``get``s closed batches and
answers them with ``Batch.set_result`` or ``Batch.set_exception``. A batch closes
when it holds ``max_batch_size`` rows, when ``deadline_ms`` has passed since its
first row, or when every connected env row is already waiting on the learner
(no further row can arrive), whichever comes first. It never waits for a full
batch. A submission larger than the room left is split across batches; its
future resolves once all of its rows are answered.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time
from collections.abc import Callable, Mapping

import numpy as np

RowArrays = Mapping[str, np.ndarray]
"""Arrays with one entry per row (same leading size): a submission's inputs (``aioseed.types.Rows``) or outputs."""


@dataclasses.dataclass(frozen=True)
class BatcherConfig:
    """Inference batching. Both fields can be changed while the learner runs."""

    max_batch_size: int = 256
    """A batch closes as soon as it holds this many env rows."""
    deadline_ms: float = 2.0
    """A batch closes this long after its first row arrived, even if not full."""

    def __post_init__(self) -> None:
        if isinstance(self.max_batch_size, bool) or not isinstance(self.max_batch_size, int):
            raise ValueError(f"max_batch_size must be an integer, got {self.max_batch_size!r}")
        if self.max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {self.max_batch_size}")
        if not 0.0 <= self.deadline_ms <= 60_000.0:
            raise ValueError(f"deadline_ms must be in [0, 60000], got {self.deadline_ms}")


class _Submission:
    __slots__ = ("inputs", "future", "size", "remaining", "outputs", "error")

    def __init__(self, inputs: RowArrays, future: asyncio.Future[dict[str, np.ndarray]], size: int) -> None:
        self.inputs = inputs
        self.future = future
        self.size = size
        self.remaining = size
        self.outputs: dict[str, np.ndarray] | None = None
        self.error: BaseException | None = None
        """Why a batch holding some of its rows failed: the future fails with it once every row is out of
        the batcher (a stream that ended earlier could be forgotten while its rows were still queued)."""


@dataclasses.dataclass(slots=True)
class _Segment:
    submission: _Submission
    start: int
    stop: int


class InferenceError(RuntimeError):
    """The policy failed on a batch, or its outputs for some rows are unusable: what the submitters'
    futures raise (``Batch.set_exception``), and so what every stream with rows in it is told."""


class Batch:
    """A closed batch: the concatenated rows plus the way back to their submitters."""

    def __init__(self, segments: list[_Segment], size: int, fill_seconds: float, reason: str) -> None:
        self._segments = segments
        self._on_done: list[Callable[[Batch], None]] = []
        self.size = size
        """Rows in the batch."""
        self.fill_seconds = fill_seconds
        """Seconds from the first row to the close."""
        self.reason = reason
        """Why it closed: "full", "deadline" or "all_waiting"."""

    @functools.cached_property
    def inputs(self) -> dict[str, np.ndarray]:
        """The rows, concatenated on first use (by the inference thread, off the event loop)."""
        first = self._segments[0]
        if len(self._segments) == 1 and first.stop - first.start == first.submission.size:
            return dict(first.submission.inputs)
        return {
            key: np.concatenate([s.submission.inputs[key][s.start : s.stop] for s in self._segments])
            for key in first.submission.inputs
        }

    def set_result(self, outputs: RowArrays) -> None:
        """Scatters ``outputs`` (row-aligned with ``inputs``) back to the submitters."""
        offset = 0
        for seg in self._segments:
            n = seg.stop - seg.start
            sub = seg.submission
            sub.remaining -= n
            if sub.error is not None:
                if sub.remaining == 0 and not sub.future.done():
                    sub.future.set_exception(sub.error)
            elif not sub.future.done():
                if n == sub.size:  # the whole submission is in this batch: slice, no copy
                    sub.future.set_result({k: v[offset : offset + n] for k, v in outputs.items()})
                else:
                    if sub.outputs is None:
                        sub.outputs = {k: np.empty((sub.size, *v.shape[1:]), v.dtype) for k, v in outputs.items()}
                    for k, v in outputs.items():
                        sub.outputs[k][seg.start : seg.stop] = v[offset : offset + n]
                    if sub.remaining == 0:
                        sub.future.set_result(sub.outputs)
            offset += n
        self._finish()

    def set_exception(self, exc: BaseException) -> None:
        """Fails every submission with rows in this batch (once its rows in other batches are answered too)."""
        for seg in self._segments:
            sub = seg.submission
            sub.remaining -= seg.stop - seg.start
            sub.error = sub.error or exc
            if sub.remaining == 0 and not sub.future.done():
                sub.future.set_exception(sub.error)
        self._finish()

    def _finish(self) -> None:
        for callback in self._on_done:
            callback(self)
        self._on_done.clear()


class Batcher:
    """Collects rows from many streams into inference batches.

    Verbs: ``submit`` (streams), ``get`` (the inference loop), ``configure``
    (the console; applies from the next batch) and ``set_connected_rows``.
    """

    def __init__(self, config: BatcherConfig) -> None:
        self._active = config
        self._staged = config
        self._open: list[_Segment] = []
        self._open_rows = 0
        self._opened_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._closed: asyncio.Queue[Batch] = asyncio.Queue()
        self._inflight_rows = 0
        self._connected_rows: int | None = None

    @property
    def config(self) -> BatcherConfig:
        """The settings that the next batch will use."""
        return self._staged

    @property
    def active(self) -> BatcherConfig:
        """The settings of the batch being filled (or of the last one)."""
        return self._active

    def configure(self, max_batch_size: int | None = None, deadline_ms: float | None = None) -> BatcherConfig:
        """Stages new settings; they take effect from the next batch. Raises ValueError."""
        self._staged = dataclasses.replace(
            self._staged,
            **{k: v for k, v in (("max_batch_size", max_batch_size), ("deadline_ms", deadline_ms)) if v is not None},
        )
        return self._staged

    def set_connected_rows(self, rows: int | None) -> None:
        """Tells how many env rows are connected, so a batch can close once all of them wait.

        ``None`` (the default) turns that rule off.
        """
        self._connected_rows = rows
        self._maybe_close_all_waiting()

    def submit(self, inputs: RowArrays) -> asyncio.Future[dict[str, np.ndarray]]:
        """Queues rows (every array has the same leading size) for inference.

        Returns a future for the row-aligned outputs. Cancelling it does not
        disturb the batch: its rows are still run, and the result is dropped.
        """
        size = _rows(inputs)
        if size == 0:
            raise ValueError("cannot submit zero rows")
        future: asyncio.Future[dict[str, np.ndarray]] = asyncio.get_running_loop().create_future()
        sub = _Submission(inputs, future, size)
        start = 0
        while start < size:
            if not self._open:
                self._begin()
            take = min(size - start, self._active.max_batch_size - self._open_rows)
            self._open.append(_Segment(sub, start, start + take))
            self._open_rows += take
            start += take
            if self._open_rows >= self._active.max_batch_size:
                self._close("full")
        self._maybe_close_all_waiting()
        return future

    async def get(self) -> Batch:
        """Waits for the next closed batch."""
        return await self._closed.get()

    @property
    def pending_batches(self) -> int:
        return self._closed.qsize()

    def _begin(self) -> None:
        self._active = self._staged
        loop = asyncio.get_running_loop()
        self._opened_at = time.monotonic()
        self._timer = loop.call_later(self._active.deadline_ms / 1000.0, self._close, "deadline")

    def _maybe_close_all_waiting(self) -> None:
        if (
            self._open_rows
            and self._connected_rows is not None
            and self._open_rows + self._inflight_rows >= self._connected_rows
        ):
            self._close("all_waiting")

    def _close(self, reason: str) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._open:
            return
        batch = Batch(segments=self._open, size=self._open_rows, fill_seconds=time.monotonic() - self._opened_at, reason=reason)
        self._inflight_rows += batch.size
        batch._on_done.append(self._on_batch_done)
        self._open = []
        self._open_rows = 0
        self._closed.put_nowait(batch)

    def _on_batch_done(self, batch: Batch) -> None:
        self._inflight_rows -= batch.size


def _rows(inputs: RowArrays) -> int:
    sizes = {len(v) for v in inputs.values()}
    if len(sizes) != 1:
        raise ValueError(f"all inputs need the same number of rows, got sizes {sorted(sizes)}")
    return sizes.pop()
