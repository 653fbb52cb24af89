"""IMPALA mode's parameters: a versioned snapshot of the weights, served in bounded chunks.

A SEED learner never sends its parameters anywhere. An IMPALA actor runs the policy itself, so it
pulls them (``GetParams``) whenever the learner's version moved on, at most once per unroll.
``publish`` runs in the train thread between steps, so a snapshot never mixes two updates; every
call then serves the same immutable bytes, however many actors ask.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from aioseed.proto import aioseed_pb2 as pb


@dataclasses.dataclass(frozen=True)
class Published:
    version: int
    header: tuple[pb.ParamsChunk, int]
    """The first message of a download (version, manifest, size) and its encoded size."""
    chunks: tuple[tuple[pb.ParamsChunk, int], ...]
    """The tensors' little-endian bytes in manifest order, cut into messages, each with its encoded size:
    built once per version, shared by every download (a bytes field is copied on each read, and upb's
    ByteSize re-encodes the message)."""


class ParamsPublisher:
    """Verbs: ``publish`` the weights as a version (train thread), ``chunks`` of the newest for an actor."""

    def __init__(self, variables: Callable[[], Sequence[Any]], chunk_bytes: int) -> None:
        """``variables``: the network's variables (anything with ``.numpy()`` and ``.name``), in the order
        the actors' networks list theirs."""
        if chunk_bytes < 1:
            raise ValueError(f"chunk_bytes must be >= 1, got {chunk_bytes}")
        self._variables = variables
        self._chunk_bytes = chunk_bytes
        self._latest: Published | None = None

    @property
    def version(self) -> int:
        """The newest published version (-1 before the first)."""
        return -1 if self._latest is None else self._latest.version

    def publish(self, version: int) -> None:
        """Snapshots the weights as ``version``; call it where no update runs (the train thread)."""
        variables = self._variables()
        arrays = [np.asarray(variable.numpy()) for variable in variables]
        arrays = [a.astype(a.dtype.newbyteorder("<"), copy=False) for a in arrays]
        manifest = tuple(
            pb.TensorInfo(name=variable.name, dtype=a.dtype.name, shape=a.shape) for variable, a in zip(variables, arrays, strict=True)
        )
        blob, size = b"".join(np.ascontiguousarray(a).tobytes() for a in arrays), self._chunk_bytes
        view = memoryview(blob)
        chunks = [pb.ParamsChunk(version=version, data=bytes(view[start : start + size])) for start in range(0, len(blob), size)]
        header = pb.ParamsChunk(version=version, manifest=manifest, total_bytes=len(blob))
        self._latest = Published(version, (header, header.ByteSize()), tuple((chunk, chunk.ByteSize()) for chunk in chunks))

    def chunks(self, have_version: int) -> Iterator[tuple[pb.ParamsChunk, int]]:
        """The newest version as (message, encoded bytes): a header (version, manifest, size), then its bytes
        in chunks of at most ``chunk_bytes``; a header with the version alone when the asker holds that
        version already. Raises LookupError before the first ``publish``."""
        latest = self._latest
        if latest is None:
            raise LookupError("no parameters published yet")
        if have_version == latest.version:
            current = pb.ParamsChunk(version=latest.version)
            yield current, current.ByteSize()
            return
        yield latest.header
        yield from latest.chunks
