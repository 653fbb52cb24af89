"""``bench acting``'s hold order and ``bench precision`` run for real on a tiny set-up."""

from __future__ import annotations

import json

from aioseed.bench.acting import order
from aioseed.bench.config import PrecisionBench, cartpole_run
from aioseed.bench.precision import main as precision_main


def test_acting_modes_are_held_in_order_and_back_so_a_linear_drift_cancels() -> None:
    assert order(("async", "bounded", "synchronous")) == ["async", "bounded", "synchronous", "synchronous", "bounded", "async"]


def test_precision_bench_times_both_precisions_side_by_side(capsys) -> None:
    bench = PrecisionBench(run=cartpole_run(), networks=("mlp",), inference_batches=(4,), seconds=0.01, json=True)
    assert precision_main(bench) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["network"] == "mlp" and result["train_batch"] == [21, 32]
    for figure in ("inference_b4_ms", "train_step_ms"):
        assert set(result[figure]) == {"float32", "bfloat16"} and all(ms > 0 for ms in result[figure].values())
    assert result["train_step_speedup"] > 0 and result["inference_b4_speedup"] > 0
