"""Dispatch of ``aioseed bench``."""

from __future__ import annotations

from aioseed.bench.config import (
    ArchitecturesBench,
    AtariBench,
    AutotuneBench,
    CartpoleBench,
    DevicesBench,
    FootballBench,
    LearningCurveBench,
    StreamsBench,
    TransportBench,
)

Command = (
    TransportBench | CartpoleBench | AtariBench | LearningCurveBench | StreamsBench | FootballBench | DevicesBench
    | ArchitecturesBench | AutotuneBench
)


def run_bench(command: Command) -> int:
    if isinstance(command, TransportBench):
        from aioseed.bench.transport import main
    elif isinstance(command, AtariBench):
        from aioseed.bench.atari import main
    elif isinstance(command, LearningCurveBench):
        from aioseed.bench.learning_curve import main
    elif isinstance(command, StreamsBench):
        from aioseed.bench.streams import main
    elif isinstance(command, FootballBench):
        from aioseed.bench.football import main
    elif isinstance(command, DevicesBench):
        from aioseed.bench.devices import main
    elif isinstance(command, ArchitecturesBench):
        from aioseed.bench.architectures import main
    elif isinstance(command, AutotuneBench):
        from aioseed.bench.autotune import main
    else:
        from aioseed.bench.cartpole import main
    return main(command)
