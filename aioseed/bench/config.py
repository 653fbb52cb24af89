"""Configs of the benchmark commands."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import tyro


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
    json: bool = False
    """Print one JSON object per configuration."""


@dataclasses.dataclass(frozen=True)
class CartpoleBench:
    """Wall seconds and env steps until mean return over 100 episodes >= 475."""

    runs: int = 3
    """Independent runs; the median is reported."""
    target_return: float = 475.0
    """Mean return over the last 100 episodes to reach."""
    timeout_s: float = 300.0
    """Give up a run after this long."""
    json: bool = False
    """Print the result as JSON."""


@dataclasses.dataclass(frozen=True)
class Bench:
    """Benchmarks that print their figures next to a baseline measured in the same run."""

    command: tyro.conf.OmitSubcommandPrefixes[
        Annotated[TransportBench, tyro.conf.subcommand("transport")]
        | Annotated[CartpoleBench, tyro.conf.subcommand("cartpole")]
    ]
