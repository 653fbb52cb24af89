"""Pulling the learner's parameters: one ``GetParams`` call, checked chunk by chunk."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import AsyncIterable, Sequence

import numpy as np

from aioseed.proto import aioseed_pb2 as pb


class ParamsError(RuntimeError):
    """The learner sent parameters this actor's network cannot take."""


@dataclasses.dataclass(frozen=True)
class Params:
    version: int
    arrays: list[np.ndarray] | None
    """The tensors in manifest order; None when the actor holds ``version`` already."""


async def receive_params(call: AsyncIterable[pb.ParamsChunk], shapes: Sequence[tuple[tuple[int, ...], str]]) -> Params:
    """Reads one ``GetParams`` answer. ``shapes``: (shape, dtype name) of each of the local network's
    variables; a manifest that differs, or data of another size, raises ParamsError before anything
    is loaded (so a learner cannot make the actor hold more than one network's bytes)."""
    chunks = aiter(call)
    header = await anext(chunks, None)
    if header is None:
        raise ParamsError("the learner's GetParams answer is empty")
    if header.total_bytes == 0 and not header.manifest:
        return Params(header.version, None)
    theirs = [(tuple(info.shape), info.dtype) for info in header.manifest]
    if theirs != [(tuple(shape), np.dtype(dtype).name) for shape, dtype in shapes]:
        raise ParamsError(
            f"the learner's network ({len(theirs)} tensors) differs from this actor's ({len(shapes)}): "
            "are both running the same aioseed version?"
        )
    sizes = [math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in theirs]
    if header.total_bytes != sum(sizes):
        raise ParamsError(f"the learner announces {header.total_bytes} bytes for tensors of {sum(sizes)} bytes")
    blob = bytearray()
    async for chunk in chunks:
        data = chunk.data  # each read of a bytes field copies it
        if chunk.version != header.version or len(blob) + len(data) > header.total_bytes:
            raise ParamsError("the learner's parameter chunks do not add up to the version announced")
        blob += data
    if len(blob) != header.total_bytes:
        raise ParamsError(f"the learner sent {len(blob)} of {header.total_bytes} parameter bytes")
    arrays, offset = [], 0
    for (shape, dtype), size in zip(theirs, sizes):
        arrays.append(np.frombuffer(blob, np.dtype(dtype).newbyteorder("<"), math.prod(shape), offset).reshape(shape))
        offset += size
    return Params(header.version, arrays)
