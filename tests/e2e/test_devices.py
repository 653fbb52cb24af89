"""`aioseed run` on two logical CPU devices: training through MirroredStrategy and inference
round-robin on both learns CartPole; `aioseed eval` restores its checkpoint on one device."""

from __future__ import annotations

import json
import re

from tests.processes import Process

FRAME_BUDGET = 500_000


async def test_two_logical_devices_learn_cartpole_and_the_checkpoint_restores_on_one(tmp_path) -> None:
    logdir = tmp_path / "run"
    run = await Process(
        [
            "run",
            "--learner.logdir", str(logdir),
            "--learner.seed", "1",
            "--learner.devices", "/CPU:0,/CPU:1",
            "--learner.inference-devices", "/CPU:0,/CPU:1",
            "--learner.return-window", "20",
            "--learner.stop.at-return", "195",
            "--learner.stop.after-frames", str(FRAME_BUDGET),
            "--learner.console.port", "0",
        ]
    ).start()
    try:
        assert await run.wait(timeout_s=240) == 0, run.log
    finally:
        run.kill()
    log = "\n".join(run.lines)
    assert "devices_placed inference=['/CPU:0', '/CPU:1'] training=['/CPU:0', '/CPU:1']" in log, run.log
    finished = re.search(r"stop_condition frames=(\d+) mean_return=([\d.]+) reason=return", log)
    assert finished and int(finished.group(1)) < FRAME_BUDGET, run.log
    assert run.errors() == [], run.log

    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "2", "--device", "/CPU:0"]).start()
    assert await evaluation.wait(timeout_s=120) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["train_steps"] > 0 and result["frames"] > 0
