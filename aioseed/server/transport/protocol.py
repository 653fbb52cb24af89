"""Validation of actor messages: every byte is checked before any state is touched."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import numpy as np
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.unknown_fields import UnknownFieldSet

from aioseed.proto import aioseed_pb2 as pb
from aioseed.spec import EnvSpec
from aioseed.types import VALID_FLAG_BYTES, Rows

BOOL_BYTES = bytes([0, 1])
"""The bytes a NumPy bool may hold (any other is undefined as a bool, to NumPy and TensorFlow alike)."""

MAX_DETAIL_CHARS = 300
"""Longest status detail sent to an actor: gRPC carries it in metadata, which has a hard size limit."""


def shorten(detail: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """``detail`` cut to ``limit`` characters, saying how long it was."""
    if len(detail) <= limit:
        return detail
    tail = f"... ({len(detail)} chars)"
    return detail[: limit - len(tail)] + tail


@dataclasses.dataclass(frozen=True)
class RowBounds:
    """Magnitudes past which a row is refused (INVALID_ARGUMENT): finite but huge values overflow the loss."""

    max_abs_reward: float = float("inf")
    """Largest |reward| accepted."""
    max_abs_observation: float = float("inf")
    """Largest |element| of a float observation accepted."""


class ProtocolError(ValueError):
    """A malformed actor message (-> INVALID_ARGUMENT)."""


class SpecMismatch(ValueError):
    """The actor's env spec differs from the learner's (-> FAILED_PRECONDITION)."""


M = TypeVar("M", bound=Message)


def strict_parser(message_type: type[M]) -> Callable[[bytes], M]:
    """A parser that refuses (ProtocolError) bytes that are no ``message_type``, and also messages that
    carry fields the schema does not define, at any depth: protobuf would keep them as unknown fields,
    so a message could be padded to the size limit with bytes nobody reads. The check walks the nested
    messages only (never a bytes field's value): about 1 us a message."""
    name = message_type.DESCRIPTOR.full_name

    def parse(raw: bytes) -> M:
        try:
            message = message_type.FromString(raw)
        except DecodeError:
            raise ProtocolError(f"a message is not a valid {name} protobuf") from None
        if (where := unknown_fields_in(message)) is not None:
            raise ProtocolError(f"{where} carries fields that {name}'s schema does not define")
        return message

    return parse


parse_actor_message = strict_parser(pb.ActorMessage)


async def checked(messages: AsyncIterator[bytes], largest: int, what: str) -> AsyncIterator[tuple[pb.ActorMessage, int]]:
    """Each of a stream's messages, parsed strictly, with its size in bytes. One longer than ``largest``,
    the most ``what`` can take, is refused (ProtocolError) before protobuf copies it. The bytes live in
    this generator's frame only, never in the handler's (see ``LearnerService.Learn``), and only while
    it is parsed: an idle stream keeps neither them nor the parsed message here (gRPC's own reader still
    holds the last bytes it read until the next arrive)."""
    async for raw in messages:
        size = len(raw)
        if size > largest:
            raise ProtocolError(f"a message of {size} bytes is longer than {what} can be ({largest} bytes)")
        message, raw = parse_actor_message(raw), None
        yield message, size
        message = None


def unknown_fields_in(message: Message, path: str = "") -> str | None:
    """Where in ``message`` protobuf kept unknown fields, e.g. ``ActorMessage.unrolls.columns[2]`` (None: nowhere)."""
    path = path or message.DESCRIPTOR.name
    if len(UnknownFieldSet(message)):
        return path
    for field, repeated in _message_fields(message.DESCRIPTOR):
        if repeated:
            for i, item in enumerate(getattr(message, field)):
                if (where := unknown_fields_in(item, f"{path}.{field}[{i}]")) is not None:
                    return where
        elif message.HasField(field) and (where := unknown_fields_in(getattr(message, field), f"{path}.{field}")) is not None:
            return where
    return None


@functools.cache
def _message_fields(descriptor: Descriptor) -> tuple[tuple[str, bool], ...]:
    """The message-typed fields of a message type: (name, repeated)."""
    return tuple((field.name, field.is_repeated) for field in descriptor.fields if field.message_type is not None)


MAX_ACTOR_NAME = 256
"""Characters of a hello's actor_name (the learner shows at most 80)."""


def parse_hello(raw: bytes, max_envs_per_stream: int) -> pb.ActorMessage:
    """A stream's first message, refused unparsed (ProtocolError) when longer than any hello can be: the spec
    and the name, and per env a run_id and a previous slot (at most 11 and 6 bytes as varints), with room to spare."""
    if len(raw) > (largest := 65_536 + 4 * MAX_ACTOR_NAME + 24 * max_envs_per_stream):
        raise ProtocolError(f"a hello of {len(raw)} bytes is longer than any this learner takes ({largest} bytes)")
    return parse_actor_message(raw)


def check_hello(hello: pb.Hello, spec: EnvSpec, max_envs_per_stream: int, max_slots: int) -> None:
    """Raises SpecMismatch or ProtocolError for an unacceptable handshake."""
    if len(hello.actor_name) > MAX_ACTOR_NAME:
        raise ProtocolError(f"hello.actor_name has {len(hello.actor_name)} characters; at most {MAX_ACTOR_NAME}")
    try:
        theirs = EnvSpec.from_proto(hello.spec)
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"hello.spec is malformed: {exc}") from exc
    if theirs != spec:
        raise SpecMismatch(f"env spec mismatch: actor has {theirs.describe()}, learner serves {spec.describe()}")
    if not 1 <= hello.num_envs <= max_envs_per_stream:
        raise ProtocolError(
            f"hello.num_envs must be in [1, {max_envs_per_stream}] (the learner's max_envs_per_stream, or the most envs "
            f"whose messages fit its max_message_bytes), got {hello.num_envs}"
        )
    if hello.num_envs % spec.rows_per_env:
        raise ProtocolError(
            f"hello.num_envs must be a multiple of the {spec.rows_per_env} controlled players of each game "
            f"({spec.players[0]} left + {spec.players[1]} right), got {hello.num_envs}"
        )
    if len(hello.run_ids) != hello.num_envs:
        raise ProtocolError(f"hello.run_ids has {len(hello.run_ids)} entries, expected num_envs={hello.num_envs}")
    if len(hello.previous_slots) not in (0, hello.num_envs):
        raise ProtocolError(
            f"hello.previous_slots has {len(hello.previous_slots)} entries, expected 0 or {hello.num_envs}"
        )
    if any(not 0 <= slot < max_slots for slot in hello.previous_slots):
        raise ProtocolError(f"hello.previous_slots must lie in [0, {max_slots}) (the learner's max_envs)")
    if 0 in hello.run_ids:
        raise ProtocolError("hello.run_ids must be non-zero")


class RowParser:
    """Turns one stream's Steps messages into validated row arrays (zero-copy).

    Fast paths keep the per-message cost low: slots and run_ids usually repeat
    byte for byte. Each slot's run_id is the one its Hello gave (a changed one
    would reset the env's state on the learner mid-stream). Rewards and float
    observations must be finite and within ``bounds``.
    """

    def __init__(
        self,
        spec: EnvSpec,
        slots: np.ndarray,
        run_ids: np.ndarray,
        evaluation: bool = False,
        bounds: RowBounds = RowBounds(),
        reconnected: bool = False,
    ) -> None:
        """``slots``: the Welcome's, in Hello order; ``run_ids``: the Hello's; ``reconnected``: the Hello named
        previous slots (its envs play on)."""
        self._spec = spec
        self._max_abs_reward = bounds.max_abs_reward
        self._max_abs_observation = bounds.max_abs_observation
        self._rows = len(slots)
        self._evaluation = np.full(len(slots), evaluation)
        self._reconnected = np.full(len(slots), reconnected)
        order = np.argsort(slots)
        self._owned = slots[order]
        self._owned_run_ids = np.asarray(run_ids, np.uint64)[order]
        self._owned_bytes = slots.astype("<i4").tobytes()
        self._run_ids_bytes = np.asarray(run_ids, "<u8").tobytes()
        """The Hello's run_ids, as a Steps message listing the slots in the Welcome's order carries them."""
        self._float_obs = spec.dtype.kind == "f"
        self._obs_nbytes = self._rows * spec.observation_nbytes
        self._obs_shape = (self._rows, *spec.observation_shape)
        self._per_game = spec.rows_per_env
        self._right = spec.right_side(self._rows)
        self.max_bytes = self._obs_nbytes + self._rows * (4 + 8 + 4 + 1) + 64
        """The longest a valid Steps message of this stream can be (its columns, and protobuf's tags and lengths)."""

    def parse(self, message: pb.ActorMessage) -> Rows:
        if message.WhichOneof("payload") != "steps":
            raise ProtocolError(f"expected a steps message after the handshake, got {message.WhichOneof('payload')}")
        steps = message.steps
        k = self._rows
        # Each read of a bytes field copies it: every field is read once.
        raw_slots, raw_run_ids, raw_flags, raw_observations = steps.slots, steps.run_ids, steps.flags, steps.observations
        slots = self._column(raw_slots, "<i4", "slots")
        if self._per_game > 1 and raw_slots != self._owned_bytes:
            raise ProtocolError(
                f"steps.slots must list this stream's {k} slots in its Welcome's order: "
                f"each game's {self._per_game} players, together, left side first"
            )
        if raw_slots != self._owned_bytes and not np.array_equal(np.sort(slots), self._owned):
            unowned = sorted(set(slots.tolist()) - set(self._owned.tolist()))
            shown = ", ".join(map(str, unowned[:4])) + (f" and {len(unowned) - 4} more" if len(unowned) > 4 else "")
            detail = f"slots {shown} are not owned by this stream" if unowned else "a slot appears twice"
            raise ProtocolError(f"steps.slots must list this stream's {k} slots once each: {detail}")
        run_ids = self._column(raw_run_ids, "<u8", "run_ids")
        if raw_slots != self._owned_bytes or raw_run_ids != self._run_ids_bytes:
            expected = self._owned_run_ids[np.searchsorted(self._owned, slots)]
            wrong = np.flatnonzero(run_ids != expected)
            if len(wrong):
                raise ProtocolError(
                    f"steps.run_ids must be each slot's run_id from the Hello; slot {int(slots[wrong[0]])} "
                    f"has {int(run_ids[wrong[0]])}, its Hello gave {int(expected[wrong[0]])}"
                )
        rewards = self._column(steps.rewards, "<f4", "rewards")
        bad = out_of_bounds(rewards, self._max_abs_reward)
        if bad is not None:
            raise ProtocolError(f"steps.rewards must be finite with |r| <= {self._max_abs_reward:g}; {bad}")
        flags = self._column(raw_flags, "u1", "flags")
        if raw_flags.translate(None, VALID_FLAG_BYTES):
            raise ProtocolError(
                "steps.flags may only set bit 0 (terminated), bit 1 (truncated), with one of them bit 2 (final), "
                "and with terminated and final bit 3 (life lost)"
            )
        if self._per_game > 1:
            games = flags.reshape(-1, self._per_game)
            split = np.flatnonzero((games != games[:, :1]).any(axis=1))
            if len(split):
                raise ProtocolError(f"steps.flags must be the same for a game's {self._per_game} players; game(s) {split[:4].tolist()} differ")
        if len(raw_observations) != self._obs_nbytes:
            raise ProtocolError(
                f"steps.observations has {len(raw_observations)} bytes, expected {self._obs_nbytes} "
                f"({k} rows of {self._spec.describe()})"
            )
        if self._spec.dtype == bool and raw_observations.translate(None, BOOL_BYTES):  # any other byte is no bool
            raise ProtocolError("steps.observations of a bool spec must hold bytes 0 or 1")
        observations = np.frombuffer(raw_observations, self._spec.dtype).reshape(self._obs_shape)
        if self._float_obs:
            bad = out_of_bounds(observations.reshape(k, -1), self._max_abs_observation)
            if bad is not None:
                raise ProtocolError(f"steps.observations must be finite with |x| <= {self._max_abs_observation:g}; {bad}")
        rows = Rows(slot=slots, run_id=run_ids, reward=rewards, flags=flags, observation=observations, evaluation=self._evaluation)
        rows["reconnected"] = self._reconnected
        if self._right is not None:
            rows["right"] = self._right
        return rows

    def _column(self, raw: bytes, dtype: str, name: str) -> np.ndarray:
        itemsize = np.dtype(dtype).itemsize
        if len(raw) != self._rows * itemsize:
            raise ProtocolError(
                f"steps.{name} has {len(raw)} bytes, expected {self._rows * itemsize} "
                f"({self._rows} rows of {np.dtype(dtype).name})"
            )
        return np.frombuffer(raw, dtype)


def out_of_bounds(values: np.ndarray, bound: float) -> str | None:
    """None when every element of ``values[K, ...]`` is finite with ``|x| <= bound``, else which rows are not.

    The fast path is one pass: the maximum of ``|x|`` is NaN when any element is.
    """
    magnitudes = np.abs(values)
    largest = magnitudes.max(initial=0.0)
    if largest <= bound and np.isfinite(largest):  # False for NaN
        return None
    return rows_not(np.isfinite(magnitudes) & (magnitudes <= bound))


def rows_not(ok: np.ndarray) -> str | None:
    """None when every element of ``ok[K, ...]`` is true, else which rows are not: "row(s) 3, 5 are not"."""
    rows = np.flatnonzero(~ok.reshape(len(ok), -1).all(axis=1))
    if not rows.size:
        return None
    shown = ", ".join(map(str, rows[:4].tolist())) + (f" and {len(rows) - 4} more" if len(rows) > 4 else "")
    return f"row(s) {shown} are not"
