"""`aioseed run --architecture anakin`: CartPole in TensorFlow, acting, stepping and learning compiled
together, learns to 475; its checkpoint is the learner's, so `aioseed eval` runs it on gymnasium's CartPole."""

from __future__ import annotations

import json

from tests.processes import Process, run_to_return


async def test_anakin_learns_cartpole_to_475_and_eval_reads_its_checkpoint(tmp_path) -> None:
    logdir = tmp_path / "anakin"
    _, _, mean_return = await run_to_return(
        [
            "--architecture", "anakin",
            "--learner.logdir", str(logdir),
            "--learner.seed", "0",
            "--learner.stop.at-return", "475",
            "--learner.stop.after-frames", "20000000",
        ],
        timeout_s=300,
    )
    assert mean_return >= 475.0

    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "3", "--greedy"]).start()
    assert await evaluation.wait(timeout_s=120) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["env"] == "CartPole-v1" and result["mean_return"] >= 150.0, result  # gymnasium's env, same policy (random: ~22)


async def test_two_runs_with_the_same_seed_give_identical_curves_and_another_seed_does_not(tmp_path) -> None:
    """Anakin's randomness is stateless and drawn from the run's seed: the same seed retraces the same
    curve, point for point (its TensorBoard curve has a point per iteration)."""
    from tests.processes import run_to_end

    from aioseed.results.curves import read_curve

    curves = []
    for name, seed in (("a", "4"), ("b", "4"), ("c", "5")):
        await run_to_end(
            ["--architecture", "anakin", "--learner.logdir", str(tmp_path / name), "--learner.seed", seed,
             "--learner.stop.at-return", "None", "--learner.stop.after-frames", "100000"],
            timeout_s=120,
        )
        curves.append([(p.frames, p.mean_return) for p in read_curve(tmp_path / name / "tensorboard")])
    same, again, other = curves
    assert len(same) >= 15 and same == again
    assert [f for f, _ in other] == [f for f, _ in same] and other != same
