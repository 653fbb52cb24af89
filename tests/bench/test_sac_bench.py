"""`bench sac` at a small scale: a real learner and actor process on Pendulum, the parts timed alone in this
process. The figures are the benchmark's; asserted here is what must hold at any speed."""

from __future__ import annotations

import json

from aioseed.bench.config import SacBench
from aioseed.bench.sac import main


def test_the_sac_bench_reports_its_rates_beside_the_bound_of_the_same_run(capsys) -> None:
    assert main(SacBench(env="Pendulum-v1", seconds=20.0, min_replay_size=200, replay_ratio=64.0, json=True)) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["env"] == "Pendulum-v1" and result["updates_per_env_step"] == 0.25
    assert result["env_steps_per_s"] > 0 and result["updates_per_s"] > 0
    # Replay pacing holds the ratio: about one update per 4 env steps once training runs.
    assert 0.15 < result["updates_per_s"] / result["env_steps_per_s"] < 0.35, result
    alone = result["alone"]
    assert result["bound_env_steps_per_s"] == min(alone["learner_bound_env_steps_per_s"], alone["actor_bound_env_steps_per_s"])
    assert 0 < result["env_steps_vs_bound"] < 1.5, result
