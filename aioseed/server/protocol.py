"""Validation of actor messages: every byte is checked before any state is touched."""

from __future__ import annotations

import numpy as np

from aioseed.proto import aioseed_pb2 as pb
from aioseed.spec import EnvSpec



class ProtocolError(ValueError):
    """A malformed actor message (-> INVALID_ARGUMENT)."""


class SpecMismatch(ValueError):
    """The actor's env spec differs from the learner's (-> FAILED_PRECONDITION)."""


def check_hello(hello: pb.Hello, spec: EnvSpec, max_envs_per_stream: int) -> None:
    """Raises SpecMismatch or ProtocolError for an unacceptable handshake."""
    try:
        theirs = EnvSpec.from_proto(hello.spec)
    except (ValueError, TypeError) as exc:
        raise ProtocolError(f"hello.spec is malformed: {exc}") from exc
    if theirs != spec:
        raise SpecMismatch(f"env spec mismatch: actor has {theirs.describe()}, learner serves {spec.describe()}")
    if not 1 <= hello.num_envs <= max_envs_per_stream:
        raise ProtocolError(f"hello.num_envs must be in [1, {max_envs_per_stream}], got {hello.num_envs}")
    if len(hello.run_ids) != hello.num_envs:
        raise ProtocolError(f"hello.run_ids has {len(hello.run_ids)} entries, expected num_envs={hello.num_envs}")
    if len(hello.previous_slots) not in (0, hello.num_envs):
        raise ProtocolError(
            f"hello.previous_slots has {len(hello.previous_slots)} entries, expected 0 or {hello.num_envs}"
        )
    if 0 in hello.run_ids:
        raise ProtocolError("hello.run_ids must be non-zero")


# terminated (1) and truncated (2) in any combination, FINAL (4) only with one of them.
VALID_FLAG_BYTES = bytes([0, 1, 2, 3, 5, 6, 7])


class RowParser:
    """Turns one stream's Steps messages into validated row arrays (zero-copy).

    Fast paths keep the per-message cost low: slots and run_ids usually repeat
    byte for byte, and a finite sum proves every element finite.
    """

    def __init__(self, spec: EnvSpec, slots: np.ndarray, evaluation: bool = False) -> None:
        self._spec = spec
        self._rows = len(slots)
        self._evaluation = np.full(len(slots), evaluation)
        self._owned = np.sort(slots)
        self._owned_bytes = slots.astype("<i4").tobytes()
        self._run_ids_bytes = b""
        self._float_obs = spec.dtype.kind == "f"
        self._obs_nbytes = self._rows * spec.observation_nbytes
        self._obs_shape = (self._rows, *spec.observation_shape)

    def parse(self, message: pb.ActorMessage) -> dict[str, np.ndarray]:
        if message.WhichOneof("payload") != "steps":
            raise ProtocolError(f"expected a steps message after the handshake, got {message.WhichOneof('payload')}")
        steps = message.steps
        k = self._rows
        slots = self._column(steps.slots, "<i4", "slots")
        if steps.slots != self._owned_bytes and not np.array_equal(np.sort(slots), self._owned):
            unowned = sorted(set(slots.tolist()) - set(self._owned.tolist()))
            detail = f"slots {unowned} are not owned by this stream" if unowned else "a slot appears twice"
            raise ProtocolError(f"steps.slots must list this stream's {k} slots once each: {detail}")
        run_ids = self._column(steps.run_ids, "<u8", "run_ids")
        if steps.run_ids != self._run_ids_bytes:
            if not run_ids.all():
                raise ProtocolError("steps.run_ids must be non-zero")
            self._run_ids_bytes = steps.run_ids
        rewards = self._column(steps.rewards, "<f4", "rewards")
        if not np.isfinite(rewards.sum()) and not np.isfinite(rewards).all():
            bad = np.flatnonzero(~np.isfinite(rewards)).tolist()
            raise ProtocolError(f"steps.rewards must be finite; rows {bad} are not")
        flags = self._column(steps.flags, "u1", "flags")
        if steps.flags.translate(None, VALID_FLAG_BYTES):
            raise ProtocolError(
                "steps.flags may only set bit 0 (terminated), bit 1 (truncated) and, with one of them, bit 2 (final)"
            )
        if len(steps.observations) != self._obs_nbytes:
            raise ProtocolError(
                f"steps.observations has {len(steps.observations)} bytes, expected {self._obs_nbytes} "
                f"({k} rows of {self._spec.describe()})"
            )
        observations = np.frombuffer(steps.observations, self._spec.dtype).reshape(self._obs_shape)
        if self._float_obs and not np.isfinite(observations.sum()) and not np.isfinite(observations).all():
            raise ProtocolError("steps.observations must be finite")
        return {
            "slots": slots,
            "run_ids": run_ids,
            "rewards": rewards,
            "flags": flags,
            "observations": observations,
            "evaluation": self._evaluation,
        }

    def _column(self, raw: bytes, dtype: str, name: str) -> np.ndarray:
        itemsize = np.dtype(dtype).itemsize
        if len(raw) != self._rows * itemsize:
            raise ProtocolError(
                f"steps.{name} has {len(raw)} bytes, expected {self._rows * itemsize} "
                f"({self._rows} rows of {np.dtype(dtype).name})"
            )
        return np.frombuffer(raw, dtype)
