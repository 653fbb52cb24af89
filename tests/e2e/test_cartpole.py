"""`aioseed run` learns CartPole end to end; `aioseed eval` runs and exports the result."""

from __future__ import annotations

import json
import re

import numpy as np

from tests.processes import Process

FRAME_BUDGET = 500_000  # runs here reach 195 after ~100K frames


async def test_run_learns_cartpole_then_eval_and_export(tmp_path) -> None:
    logdir = tmp_path / "run"
    run = await Process(
        [
            "run",
            "--learner.logdir", str(logdir),
            "--learner.seed", "1",
            "--learner.return-window", "20",
            "--learner.stop.at-return", "195",
            "--learner.stop.after-frames", str(FRAME_BUDGET),
            "--learner.log-every-s", "2",
            "--learner.console.port", "0",
        ]
    ).start()
    try:
        assert await run.wait(timeout_s=240) == 0, run.log
    finally:
        run.kill()
    finished = re.search(r"stop_condition frames=(\d+) mean_return=([\d.]+) reason=return", "\n".join(run.lines))
    assert finished, run.log
    frames, mean_return = int(finished.group(1)), float(finished.group(2))
    assert mean_return >= 195.0, run.log
    assert frames < FRAME_BUDGET
    assert run.errors() == [], run.log

    export = tmp_path / "policy"
    evaluation = await Process(
        ["eval", "--logdir", str(logdir), "--episodes", "5", "--greedy", "--export", str(export)]
    ).start()
    assert await evaluation.wait(timeout_s=120) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["episodes"] == 5 and result["env"] == "CartPole-v1"
    assert result["mean_return"] >= 150.0, result  # a random policy averages ~22; greedy here ~400
    assert result["train_steps"] > 0

    # The SavedModel loads with plain TensorFlow, without aioseed.
    import tensorflow as tf

    policy = tf.saved_model.load(str(export))
    out = policy.signatures["greedy"](observations=tf.zeros([3, 4], tf.float32))
    assert out["action"].shape == (3,) and out["logits"].shape == (3, 2)
    assert set(np.unique(out["action"].numpy())) <= {0, 1}
