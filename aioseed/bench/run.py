"""Dispatch of ``aioseed bench``: each benchmark NAME lives in ``aioseed.bench.NAME`` (dashes as
underscores), which exposes ``main(config) -> int``."""

from __future__ import annotations

import importlib
from types import ModuleType

from aioseed.bench.config import BENCHES


def bench_module(command: object) -> ModuleType:
    """The module of the benchmark whose config ``command`` is (imported only now: TF and the envs load late)."""
    name = next(name for name, config in BENCHES.items() if isinstance(command, config))
    return importlib.import_module(f"aioseed.bench.{name.replace('-', '_')}")


def run_bench(command: object) -> int:
    return bench_module(command).main(command)
