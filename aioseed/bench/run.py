"""Dispatch of ``aioseed bench``."""

from __future__ import annotations

from aioseed.bench.config import CartpoleBench, TransportBench


def run_bench(command: TransportBench | CartpoleBench) -> int:
    if isinstance(command, TransportBench):
        from aioseed.bench.transport import main

        return main(command)
    from aioseed.bench.cartpole import main

    return main(command)
