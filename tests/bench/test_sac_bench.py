"""`bench sac` at a small scale: a real learner and actor process on Pendulum for each update path (today's and
the fused one), the parts timed alone in this process. The figures are the benchmark's; asserted here is what
must hold at any speed."""

from __future__ import annotations

import json

import pytest

from aioseed.bench.config import SacBench
from aioseed.bench.sac import main


def test_the_sac_bench_reports_both_paths_rates_beside_the_bound_of_the_same_run(capsys) -> None:
    bench = SacBench(env="Pendulum-v1", seconds=12.0, warmup_s=10.0, min_replay_size=64, replay_ratio=64.0, minibatches=2, json=True)
    assert main(bench) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["env"] == "Pendulum-v1" and result["updates_per_env_step"] == 0.25
    assert set(result["paths"]) == {"separate", "fused x2 xla"}
    for figures in result["paths"].values():
        assert len(figures["holds_updates_per_s"]) == 2  # A B B A
        # Replay pacing holds the ratio on either path: about one update per 4 env steps once training runs.
        assert 0.15 < figures["updates_per_s"] / figures["env_steps_per_s"] < 0.35, figures
        alone = figures["alone"]
        assert figures["bound_env_steps_per_s"] == min(alone["learner_bound_env_steps_per_s"], alone["actor_bound_env_steps_per_s"])
        assert 0 < figures["env_steps_vs_bound"] < 1.5, figures
        # The update's time alone splits into its matrix products at this machine's rate and the rest.
        assert alone["update_gflop"] > 0 and alone["matmul_gflop_per_s"] > 0
        assert alone["update_compute_ms"] == pytest.approx(alone["update_gflop"] / alone["matmul_gflop_per_s"] * 1e3, rel=0.05)
        assert alone["update_compute_ms"] + alone["update_overhead_ms"] == pytest.approx(alone["update_ms"], abs=0.002)
    assert result["updates_per_s_ratio"] > 0 and result["update_ms_ratio"] > 0
