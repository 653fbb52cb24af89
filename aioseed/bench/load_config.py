"""Configs of the benchmarks that load a server through the wire with many client streams."""

from __future__ import annotations

import dataclasses
import pathlib


@dataclasses.dataclass(frozen=True)
class TransportBench:
    """Null env + trivial model through the real learner, against a raw grpc.aio echo."""

    streams: tuple[int, ...] = (1, 64, 1024)
    """Concurrent streams per configuration."""
    rows_per_message: tuple[int, ...] = (1, 64)
    """K values."""
    seconds: float = 5.0
    """Measured seconds per configuration (after warm-up)."""
    actor_processes: int = 1
    """Client processes sharing the streams."""
    max_batch_size: int = 1024
    """The learner's max_batch_size (raised to K when K is larger)."""
    deadline_ms: float = 2.0
    """The learner's batch deadline."""
    json: bool = False
    """Print one JSON object per configuration."""

    def __post_init__(self) -> None:
        if self.actor_processes < 1 or min(self.streams, default=0) < 1 or min(self.rows_per_message, default=0) < 1:
            raise ValueError("actor_processes, every streams value and every rows_per_message value must be >= 1")


@dataclasses.dataclass(frozen=True)
class ServeBench:
    """aioseed serve against aioseed learner with training paused, on the same CartPole checkpoint and the same
    load (evaluation streams, which both act on and never store): steps/s and steps per CPU-second of the server."""

    streams: int = 64
    """Concurrent streams."""
    rows_per_message: int = 8
    """K."""
    seconds: float = 10.0
    """Measured seconds per trial (after a warm-up)."""
    repeats: int = 3
    """Trials per server, alternating; the figures are medians."""
    checkpoint: pathlib.Path | None = None
    """A CartPole run's logdir (None: one is trained for 2,000 frames first, in a temporary directory)."""
    max_batch_size: int = 512
    deadline_ms: float = 2.0
    json: bool = False
    """Print one JSON object."""


@dataclasses.dataclass(frozen=True)
class StreamsBench:
    """Many concurrent actor streams against a real learner (CartPole MLP, training): throughput,
    latency, per-stream fairness, learner memory and file descriptors."""

    streams: int = 1024
    """Concurrent streams, spread over the client processes."""
    baseline_streams: int = 64
    """Streams of the baseline measured first in the same run (0: none)."""
    rows_per_message: int = 1
    """K: env rows per message."""
    seconds: float = 20.0
    """Measured seconds, after the warm-up (use 600 for the soak)."""
    warmup_s: float = 30.0
    """Seconds of traffic before measuring: connections, tracing, and the first unroll of every env, which
    all envs finish at once (at 4,096 streams about 10 s in); that burst is start-up, not steady state."""
    client_processes: int = 2
    """Processes the streams are spread over."""
    max_batch_size: int = 1024
    """The learner's max_batch_size."""
    deadline_ms: float = 2.0
    """The learner's batch deadline."""
    json: bool = False
    """Print one JSON object per configuration."""

    def __post_init__(self) -> None:
        if self.client_processes < 1 or self.streams < 1 or self.rows_per_message < 1:
            raise ValueError("client_processes, streams and rows_per_message must be >= 1")
