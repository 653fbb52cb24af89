"""IMPALA mode's uploads: finished unrolls from actors that run the policy themselves.

``UnrollParser`` checks one stream's ``Unrolls`` messages byte for byte before anything is
queued: the columns are exactly the learner's unroll columns, every size matches, values are
finite and bounded, actions are in range, each slot's unrolls follow on from one another and the
episode flags agree (``UploadHistory``). The episode returns and lengths the learner records are
its own sums over the steps, never the figures the actor reports. ``Uploads`` queues accepted unrolls for the same trainer SEED mode feeds; the
bounded queue stalls the uploading streams when training lags, and so the actors.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Collection, Iterator, Mapping

import numpy as np

from aioseed.action_space import ActionSpace, Discrete, invalid_actions
from aioseed.proto import aioseed_pb2 as pb
from aioseed.server.transport.params import ParamsPublisher
from aioseed.server.transport.protocol import BOOL_BYTES, ProtocolError, RowBounds, out_of_bounds, shorten
from aioseed.server.transport.upload_history import UploadHistory
from aioseed.types import Column, Unroll

MAX_ABS_LOGIT = 1e6
"""Largest |behaviour logit| accepted: beyond, V-trace's log-softmax differences overflow float32."""
MAX_ABS_STATE = 1e6
"""Largest |x| of the other float columns, the recurrent state and the previous action's features (an LSTM's
h stays in [-1, 1], its c grows by at most 1 a step): a finite 1e30 would overflow the network's layers, so
every train batch holding that unroll would be skipped as non-finite, stalling training for all actors."""


@dataclasses.dataclass
class Upload:
    """One accepted ``Unrolls`` message."""

    unrolls: list[Unroll]
    episode_returns: np.ndarray
    """<float64>[E] the episodes that ended in these unrolls, summed by the learner from their steps"""
    episode_lengths: np.ndarray
    """<int64>[E] their lengths in env steps"""
    env_steps: int
    """New env steps the unrolls hold: steps 1..T whose action ran (step 0 repeats the previous unroll's last)."""


class UnrollParser:
    """Verbs: ``parse`` one message of a stream that holds ``slots``."""

    def __init__(
        self,
        columns: Mapping[str, Column],
        per_unroll: Collection[str],
        unroll_length: int,
        slots: np.ndarray,
        space: ActionSpace,
        bounds: RowBounds = RowBounds(),
    ) -> None:
        """``columns``: the learner's unroll columns (``aioseed.server.acting.unroll_columns``); ``per_unroll``
        of them hold the first step only (recurrent state)."""
        self._columns = dict(columns)
        self._per_unroll = frozenset(per_unroll)
        self._steps = unroll_length + 1
        self._owned = frozenset(slots.tolist())
        self._space = space
        self._bounds = bounds
        self._history = UploadHistory(per_unroll)
        k = len(slots)
        data = sum(k * (1 if name in per_unroll else self._steps) * math.prod(shape) * np.dtype(dtype).itemsize for name, (shape, dtype) in columns.items())
        self.max_bytes = data + 4 * k + 16 * k * self._steps + sum(64 + 2 * len(name) for name in columns) + 64
        """The longest a valid Unrolls message of this stream can be: its K unrolls' columns, its slots, at
        most one episode per step, and protobuf's tags, names and lengths."""

    def parse(self, message: pb.ActorMessage, newest_version: int) -> Upload:
        if message.WhichOneof("payload") != "unrolls":
            raise ProtocolError(f"expected an unrolls message after the handshake, got {message.WhichOneof('payload')}")
        upload = message.unrolls
        slots = self._slots(upload.slots)
        count = len(slots)
        if len(upload.columns) > 2 * len(self._columns):
            raise ProtocolError(f"unrolls.columns has {len(upload.columns)} entries, expected {len(self._columns)}")
        given = [column.name for column in upload.columns]
        if sorted(given) != sorted(self._columns):
            missing = sorted(set(self._columns) - set(given))
            extra = sorted(set(given) - set(self._columns))[:4]
            raise ProtocolError(
                f"unrolls.columns must be {sorted(self._columns)} once each; missing {missing}, unexpected "
                f"{[name[:40] for name in extra]}" + (", some twice" if len(given) != len(set(given)) else "")
            )
        arrays = {column.name: self._array(column, count) for column in upload.columns}
        self._check_values(arrays)
        self._history.check(slots, arrays)
        phantom = arrays["phantom"]
        self._check_reported(upload, int((arrays["done"] | phantom).sum()))
        returns, lengths = self._history.episodes(slots, arrays)
        # Versions only measure the policy lag. An actor that acted for a learner since restarted (from an
        # older checkpoint) may name versions this one has not reached: they count as its newest.
        arrays["version"] = np.minimum(arrays["version"], max(newest_version, 0))
        unrolls = [{**{name: array[i] for name, array in arrays.items()}, "slot": slots[i]} for i in range(count)]
        return Upload(unrolls, returns, lengths, int((~phantom[:, 1:]).sum()))

    def _slots(self, raw: bytes) -> np.ndarray:
        if not raw or len(raw) % 4:
            raise ProtocolError(f"unrolls.slots must hold one or more <i4> slots, got {len(raw)} bytes")
        slots = np.frombuffer(raw, "<i4").astype(np.int32)
        if len(slots) > len(self._owned) or len(set(slots.tolist())) != len(slots):
            raise ProtocolError(f"unrolls.slots must list distinct slots of this stream's {len(self._owned)} envs")
        unowned = [s for s in slots.tolist() if s not in self._owned]
        if unowned:
            raise ProtocolError(f"slots {unowned[:4]} are not owned by this stream")
        return slots

    def _array(self, column: pb.Column, count: int) -> np.ndarray:
        shape, dtype = self._columns[column.name]
        dtype = np.dtype(dtype)
        if column.dtype != dtype.newbyteorder("<").str:
            raise ProtocolError(
                f"unrolls column {column.name} is {shorten(column.dtype, 16)!r}, expected {dtype.newbyteorder('<').str!r} ({dtype.name})"
            )
        full = (count, *shape) if column.name in self._per_unroll else (count, self._steps, *shape)
        expected = math.prod(full) * dtype.itemsize
        data = column.data  # each read of a bytes field copies it
        if len(data) != expected:
            raise ProtocolError(
                f"unrolls column {column.name} has {len(data)} bytes, expected {expected} "
                f"({dtype.name}{list(full)})"
            )
        if dtype == bool:
            if data.translate(None, BOOL_BYTES):
                raise ProtocolError(f"unrolls column {column.name} must hold bytes 0 or 1")
            return np.frombuffer(data, np.uint8).view(bool).reshape(full)
        return np.frombuffer(data, dtype.newbyteorder("<")).reshape(full).astype(dtype, copy=False)

    def _check_values(self, arrays: dict[str, np.ndarray]) -> None:
        count = len(arrays["reward"])
        bad = out_of_bounds(arrays["reward"], self._bounds.max_abs_reward)
        if bad is not None:
            raise ProtocolError(f"unrolls rewards must be finite with |r| <= {self._bounds.max_abs_reward:g}; unroll {bad}")
        observation = arrays["observation"]
        if observation.dtype.kind == "f":
            bad = out_of_bounds(observation.reshape(count, -1), self._bounds.max_abs_observation)
            if bad is not None:
                raise ProtocolError(f"unrolls observations must be finite with |x| <= {self._bounds.max_abs_observation:g}; unroll {bad}")
        action = arrays["action"]
        if action.dtype.kind in "iu" and invalid_actions(self._space, action.reshape(-1, *self._space.row_shape)).any():
            if isinstance(self._space, Discrete):
                raise ProtocolError(f"unrolls actions must lie in [0, {self._space.n})")
            raise ProtocolError(f"unrolls actions must lie in [0, n) per element of {self._space.describe()}")
        version = arrays["version"]
        if version.size and version.min() < 0:
            raise ProtocolError(f"unrolls versions must be >= 0, got {version.min()}")
        for name, array in arrays.items():
            if name not in ("reward", "observation") and array.dtype.kind == "f":
                # A Box's stored action is a Gaussian's pre-squash sample, bounded as its parameters are.
                bound = MAX_ABS_LOGIT if name in ("logits", "action") else MAX_ABS_STATE
                bad = out_of_bounds(array.reshape(count, -1), bound)
                if bad is not None:
                    raise ProtocolError(f"unrolls column {name} must be finite with |x| <= {bound:g}; unroll {bad}")

    def _check_reported(self, upload: pb.Unrolls, boundaries: int) -> None:
        """The episodes the actor reports (checked, then not used): no more than the unrolls' episode
        boundaries (done or final steps), each with a length >= 1 and a return a bounded reward per step can reach."""
        raw_returns, raw_lengths = upload.episode_returns, upload.episode_lengths
        if len(raw_returns) % 8 or len(raw_returns) != len(raw_lengths):
            raise ProtocolError("unrolls.episode_returns (<f8>) and episode_lengths (<i8>) must have one entry per episode")
        returns = np.frombuffer(raw_returns, "<f8").astype(np.float64)
        lengths = np.frombuffer(raw_lengths, "<i8").astype(np.int64)
        if len(returns) > boundaries:
            raise ProtocolError(f"{len(returns)} episodes reported, but the unrolls hold {boundaries} episode boundaries")
        if (lengths < 1).any() or not (np.abs(returns) <= self._bounds.max_abs_reward * lengths).all():
            raise ProtocolError(
                f"unrolls episode lengths must be >= 1 and |return| <= {self._bounds.max_abs_reward:g} x length"
            )


class Uploads:
    """The learner's side of IMPALA mode. Verbs: ``welcome`` a stream, ``parser`` for it, ``receive`` an upload."""

    def __init__(
        self,
        params: ParamsPublisher,
        unrolls: asyncio.Queue[Unroll],
        parser: Callable[[np.ndarray], UnrollParser],
        on_upload: Callable[[Upload], None],
        agent_config: str,
        unroll_length: int,
    ) -> None:
        """``parser``: makes a stream's parser for its slots; ``on_upload``: counts frames and episodes once
        the upload's unrolls are queued; ``agent_config``: JSON from which actors build the network."""
        self.publisher = params
        self._unrolls = unrolls
        self.parser = parser
        self._on_upload = on_upload
        self._agent_config = agent_config
        self._unroll_length = unroll_length
        self.received_bytes = 0
        """Unrolls messages accepted so far, in serialized bytes."""
        self.sent_bytes = 0
        """Parameter chunks sent so far, in serialized bytes."""

    def metrics(self) -> dict[str, float]:
        return {
            "impala/params_version": float(self.version),
            "impala/received_bytes": float(self.received_bytes),
            "impala/params_sent_bytes": float(self.sent_bytes),
        }

    @property
    def version(self) -> int:
        return self.publisher.version

    def welcome(self, slots: np.ndarray) -> pb.Welcome:
        return pb.Welcome(slots=slots.tolist(), agent_config=self._agent_config, unroll_length=self._unroll_length)

    async def receive(self, upload: Upload, message_bytes: int) -> None:
        """Queues the unrolls; waits while the queue is full (back-pressure on the uploading stream)."""
        for unroll in upload.unrolls:
            await self._unrolls.put(unroll)
        self.received_bytes += message_bytes
        self._on_upload(upload)

    def params(self, have_version: int) -> Iterator[pb.ParamsChunk]:
        """``ParamsPublisher.chunks``, counted."""
        for chunk, nbytes in self.publisher.chunks(have_version):
            self.sent_bytes += nbytes
            yield chunk
