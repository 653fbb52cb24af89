"""`aioseed bench NAME` runs ``aioseed.bench.NAME.main`` with NAME's config."""

from __future__ import annotations

import inspect

import pytest

from aioseed.bench.config import BENCHES
from aioseed.bench.run import bench_module
from aioseed.cli import parse


def test_every_benchmark_dispatches_to_its_own_modules_main_taking_its_config() -> None:
    for name, config in BENCHES.items():
        module = bench_module(config())
        assert module.__name__ == f"aioseed.bench.{name.replace('-', '_')}"
        (parameter,) = inspect.signature(module.main).parameters.values()
        assert parameter.annotation in (config.__name__, config)


@pytest.mark.parametrize(
    ("args", "named"),
    [(["architectures", "--workloads", "foo"], "foo"), (["architectures", "--architectures", "seeed"], "seeed"),
     (["env-backends", "--backends", "foo"], "foo"), (["devices", "--networks", "impala_resnet"], "impala_resnet"),
     (["autotune", "--workloads", "cartpole-128"], "cartpole-128"), (["streams", "--client-processes", "0"], "client_processes"),
     (["env-backends", "--episodes", "1"], "episodes must be >= 2")],
)
def test_a_bench_name_or_count_it_cannot_run_is_refused_before_it_starts(args: list[str], named: str, capsys) -> None:
    """Before: a KeyError minutes in, a hang, or the default measured under the typo's label."""
    with pytest.raises(SystemExit) as exited:
        parse(["bench", *args])
    assert exited.value.code == 2 and named in " ".join(capsys.readouterr().err.split())
