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
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence

import numpy as np

from aioseed.action_space import LOG_STD_MAX, LOG_STD_MIN, MAX_ABS_PRESQUASH, ActionSpace, Box, Discrete, invalid_actions
from aioseed.proto import aioseed_pb2 as pb
from aioseed.server.transport.params import ParamsPublisher
from aioseed.server.transport.protocol import BOOL_BYTES, ProtocolError, RowBounds, out_of_bounds, rows_not, shorten
from aioseed.server.transport.upload_history import Taken, UploadHistory, digests
from aioseed.types import Column, Unroll

MAX_ABS_LOGIT = 1e6
"""Largest |behaviour logit| accepted: beyond, V-trace's log-softmax differences overflow float32."""
MAX_ABS_STATE = 1e6
"""Largest |x| of the other float columns, the recurrent state and the previous action's features (an LSTM's
h stays in [-1, 1], its c grows by at most 1 a step): a finite 1e30 would overflow the network's layers, so
every train batch holding that unroll would be skipped as non-finite, stalling training for all actors."""


@dataclasses.dataclass
class Upload:
    """One checked ``Unrolls`` message: its unrolls, each taken in once it is queued (``Uploads.receive``)."""

    unrolls: list[Unroll]
    taken: list[Taken]
    """Per unroll: its slot's history once it is queued, its new env steps and the episodes that ended in it
    (the learner's own sums over its steps)."""
    repeated: int = 0
    """Unrolls left out: byte for byte the slot's last accepted one (sent again after a reconnect)."""
    clipped_actions: int = 0
    """A Box's pre-squash action elements beyond +-MAX_ABS_PRESQUASH, clipped to it."""

    @property
    def env_steps(self) -> int:
        return sum(taken.env_steps for taken in self.taken)

    @property
    def episode_returns(self) -> np.ndarray:
        """<float64>[E] the episodes that ended in these unrolls and whose start was seen"""
        return np.array([r for taken in self.taken for r in taken.returns], np.float64)

    @property
    def episode_lengths(self) -> np.ndarray:
        """<int64>[E] their lengths in env steps"""
        return np.array([n for taken in self.taken for n in taken.lengths], np.int64)


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
        history: UploadHistory | None = None,
    ) -> None:
        """``columns``: the learner's unroll columns (``aioseed.server.acting.unroll_columns``); ``per_unroll``
        of them hold the first step only (recurrent state); ``history``: the learner's, shared by its streams (a
        parser of its own by default)."""
        self._columns = dict(columns)
        self._per_unroll = frozenset(per_unroll)
        self._steps = unroll_length + 1
        self._owned = frozenset(slots.tolist())
        self._space = space
        self._bounds = bounds
        self.history = history if history is not None else UploadHistory(per_unroll)
        self._first = True
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
        sent = digests(arrays)
        self._check_values(arrays)
        clipped = self._clip_presquash(arrays)
        phantom = arrays["phantom"]
        self._check_reported(upload, int((arrays["done"] | phantom).sum()))
        # A stream's first upload may repeat unrolls queued already (their Accepted answer was lost with the old
        # stream); later, an env's next unroll equal to its last one is only a state that did not change.
        if self._first and (repeated := self.history.repeated(slots, sent)).any():
            new = ~repeated
            slots, sent, arrays = slots[new], [d for d, keep in zip(sent, new) if keep], {k: v[new] for k, v in arrays.items()}
        self.history.check(slots, arrays)
        taken = self.history.take(slots, arrays, sent)
        # Versions only measure the policy lag. An actor that acted for a learner since restarted (from an
        # older checkpoint) may name versions this one has not reached: they count as its newest.
        arrays["version"] = np.minimum(arrays["version"], max(newest_version, 0))
        unrolls = [{**{name: array[i] for name, array in arrays.items()}, "slot": slots[i]} for i in range(len(slots))]
        self._first = False
        return Upload(unrolls=unrolls, taken=taken, repeated=count - len(slots), clipped_actions=clipped)

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
        if isinstance(self._space, Box):  # [mean, log_std]: a log-std the policy cannot produce makes a log-density NaN
            log_std = arrays["logits"][..., self._space.size :]
            bad = rows_not((log_std >= LOG_STD_MIN) & (log_std <= LOG_STD_MAX))
            if bad is not None:
                raise ProtocolError(f"unrolls logits' log-std half must lie in [{LOG_STD_MIN:g}, {LOG_STD_MAX:g}], the policy's range; unroll {bad}")

    def _clip_presquash(self, arrays: dict[str, np.ndarray]) -> int:
        """Clips a Box's pre-squash actions to +-MAX_ABS_PRESQUASH (where tanh is already +-1: the env action is the
        same); returns how many elements it clipped."""
        if not isinstance(self._space, Box):
            return 0
        action = arrays["action"]
        clipped = int(np.count_nonzero(np.abs(action) > MAX_ABS_PRESQUASH))
        if clipped:
            arrays["action"] = np.clip(action, -MAX_ABS_PRESQUASH, MAX_ABS_PRESQUASH)
        return clipped

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
        parser: Callable[[np.ndarray, UploadHistory | None], UnrollParser],
        history: UploadHistory,
        on_unroll: Callable[[Taken], None],
        agent_config: str,
        unroll_length: int,
    ) -> None:
        """``parser(slots, history)``: makes a stream's parser for its slots; ``history``: the learner's, per slot, which
        the streams' parsers share; ``on_unroll``: counts an unroll's frames and episodes once it is queued;
        ``agent_config``: JSON from which actors build the network."""
        self.publisher = params
        self._unrolls = unrolls
        self._parser = parser
        self.history = history
        self._on_unroll = on_unroll
        self._agent_config = agent_config
        self._unroll_length = unroll_length
        self.received_bytes = 0
        """Unrolls messages accepted so far, in serialized bytes."""
        self.clipped_actions = 0
        """A Box's pre-squash action elements clipped to +-MAX_ABS_PRESQUASH so far."""
        self.repeated = 0
        """Unrolls sent again after a reconnect that had been queued already (acknowledged, not queued again)."""
        self.sent_bytes = 0
        """Parameter chunks sent so far, in serialized bytes."""

    def parser(self, slots: np.ndarray, shared: bool = True) -> UnrollParser:
        """A stream's parser (``shared``: on the learner's history; else on one of its own, to size messages)."""
        return self._parser(slots, self.history if shared else None)

    def metrics(self) -> dict[str, float]:
        return {
            "impala/params_version": float(self.version),
            "impala/received_bytes": float(self.received_bytes),
            "impala/params_sent_bytes": float(self.sent_bytes),
            "impala/clipped_actions": float(self.clipped_actions),
            "impala/repeated_unrolls": float(self.repeated),
        }

    @property
    def version(self) -> int:
        return self.publisher.version

    def welcome(self, slots: np.ndarray, run_ids: Sequence[int], reconnected: bool) -> pb.Welcome:
        """A stream holds ``slots`` for the envs ``run_ids``: an env that reconnects and gets its slot back carries on;
        ``reconnected``: the hello named previous slots (its envs play on), else they have just reset."""
        self.history.adopt(slots.tolist(), run_ids, reconnected)
        return pb.Welcome(slots=slots.tolist(), agent_config=self._agent_config, unroll_length=self._unroll_length)

    async def receive(self, upload: Upload, message_bytes: int) -> None:
        """Queues the unrolls, each taken in (history, frames, episodes) as it is queued: a stream cut off while the
        queue is full (back-pressure on the uploading stream) leaves exactly what was queued counted."""
        for unroll, taken in zip(upload.unrolls, upload.taken, strict=True):
            await self._unrolls.put(unroll)
            self.history.commit(taken)
            self._on_unroll(taken)
        self.received_bytes += message_bytes
        self.clipped_actions += upload.clipped_actions
        self.repeated += upload.repeated

    def params(self, have_version: int) -> Iterator[pb.ParamsChunk]:
        """``ParamsPublisher.chunks``, counted."""
        for chunk, nbytes in self.publisher.chunks(have_version):
            self.sent_bytes += nbytes
            yield chunk
