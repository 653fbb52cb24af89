"""`aioseed run` on two logical CPU devices: training through MirroredStrategy and inference
round-robin on both learns CartPole; `aioseed eval` restores its checkpoint on one device."""

from __future__ import annotations

import json

from tests.processes import CARTPOLE_FRAME_BUDGET, CARTPOLE_TO_195, Process, run_to_return


async def test_two_logical_devices_learn_cartpole_and_the_checkpoint_restores_on_one(tmp_path) -> None:
    logdir = tmp_path / "run"
    log, frames, _ = await run_to_return(
        [
            "--learner.logdir", str(logdir),
            "--learner.devices", "/CPU:0,/CPU:1",
            "--learner.inference-devices", "/CPU:0,/CPU:1",
            *CARTPOLE_TO_195,
        ]
    )
    assert "devices_placed inference=['/CPU:0', '/CPU:1'] training=['/CPU:0', '/CPU:1']" in log, log
    assert frames < CARTPOLE_FRAME_BUDGET

    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "2", "--device", "/CPU:0"]).start()
    assert await evaluation.wait(timeout_s=120) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["train_steps"] > 0 and result["frames"] > 0
