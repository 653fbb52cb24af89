"""`aioseed bench NAME` runs ``aioseed.bench.NAME.main`` with NAME's config."""

from __future__ import annotations

import inspect

from aioseed.bench.config import BENCHES
from aioseed.bench.run import bench_module


def test_every_benchmark_dispatches_to_its_own_modules_main_taking_its_config() -> None:
    for name, config in BENCHES.items():
        module = bench_module(config())
        assert module.__name__ == f"aioseed.bench.{name.replace('-', '_')}"
        (parameter,) = inspect.signature(module.main).parameters.values()
        assert parameter.annotation in (config.__name__, config)
