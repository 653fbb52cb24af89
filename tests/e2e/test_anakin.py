"""`aioseed run --architecture anakin`: CartPole in TensorFlow, acting, stepping and learning compiled
together, learns to 475; its checkpoint is the learner's, so `aioseed eval` runs it on gymnasium's CartPole."""

from __future__ import annotations

import json
import re

from tests.processes import Process


async def test_anakin_learns_cartpole_to_475_and_eval_reads_its_checkpoint(tmp_path) -> None:
    logdir = tmp_path / "anakin"
    run = await Process(
        [
            "run", "--architecture", "anakin",
            "--learner.logdir", str(logdir),
            "--learner.seed", "0",
            "--learner.stop.at-return", "475",
            "--learner.stop.after-frames", "20000000",
            "--learner.console.port", "0",
        ]
    ).start()
    try:
        assert await run.wait(timeout_s=300) == 0, run.log
    finally:
        run.kill()
    finished = re.search(r"stop_condition frames=(\d+) mean_return=([\d.]+) reason=return", "\n".join(run.lines))
    assert finished and float(finished.group(2)) >= 475.0, run.log
    assert run.errors() == [], run.log

    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "3", "--greedy"]).start()
    assert await evaluation.wait(timeout_s=120) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["env"] == "CartPole-v1" and result["mean_return"] >= 150.0, result  # gymnasium's env, same policy (random: ~22)
