"""Continuous control end to end: `aioseed run` learns Pendulum-v1 through real learner and actor processes,
with Box actions on the wire, and `aioseed eval` runs the squashed mean action."""

from __future__ import annotations

import json
import re

import pytest
from tests.processes import Process, run_to_end, run_to_return

PENDULUM_PPO = (
    "--learner.env", "Pendulum-v1",
    "--num-actors", "1", "--envs-per-actor", "8", "--envs-per-message", "8",
    "--learner.training.acting", "synchronous",
    "--learner.training.unroll-length", "256",
    "--learner.training.batch-size", "8",
    "--learner.impala.discount", "0.9",
    "--learner.impala.lambda_", "0.95",
    "--learner.impala.targets", "gae",
    "--learner.impala.epochs", "10",
    "--learner.impala.minibatches", "32",
    "--learner.impala.minibatch", "transitions",
    "--learner.impala.ppo-clip", "0.2",
    "--learner.impala.entropy-cost", "0",
    "--learner.impala.normalize-advantages",
    "--learner.impala.normalize-observations",
    "--learner.impala.scale-rewards",
    "--learner.impala.learning-rate", "1e-3",
    "--learner.impala.max-grad-norm", "0.5",
    "--learner.impala.init", "orthogonal",
    "--learner.impala.adam-epsilon", "1e-5",
    "--learner.seed", "1",
    "--learner.return-window", "20",
    "--learner.stop.at-return", "-200",
    "--learner.stop.after-frames", "400000",
    "--learner.console.port", "0",
)
"""The PPO-style path (tanh-Gaussian, GAE, 10 epochs x 32 minibatches of shuffled transitions, normalised
observations and rewards) with RL Zoo's Pendulum discount 0.9. Here it passed -200 after ~100K frames."""


async def test_run_learns_pendulum_with_the_tanh_gaussian_ppo_path_then_evaluates_the_mean_action(tmp_path) -> None:
    logdir = tmp_path / "run"
    log, frames, mean_return = await run_to_return(["--learner.logdir", str(logdir), *PENDULUM_PPO], timeout_s=420)
    assert mean_return >= -200.0, log  # a random policy averages about -1,200
    assert "Box[1] actions in [-2, 2]" in log
    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "5", "--greedy"]).start()
    assert await evaluation.wait(timeout_s=120) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["env"] == "Pendulum-v1" and result["policy"] == "greedy"
    assert result["mean_return"] >= -400.0, result


PENDULUM_SAC = (
    "--learner.env", "Pendulum-v1",
    "--learner.agent", "sac",
    "--num-actors", "1", "--envs-per-actor", "4", "--envs-per-message", "4",
    "--learner.training.unroll-length", "1",
    "--learner.training.batch-size", "256",
    "--learner.training.acting", "replay",
    "--learner.sac.min-replay-size", "1000",
    "--learner.seed", "1",
    "--learner.return-window", "20",
    "--learner.stop.at-return", "-200",
    "--learner.stop.after-frames", "30000",
    "--learner.console.port", "0",
)
"""SAC with CleanRL's settings (one update of 256 transitions per env step, held by replay pacing) after
1,000 transitions. Here it passed -200 after ~8K frames."""


async def _learns_pendulum_at_one_update_per_step_then_evaluates_greedily(logdir, flags: tuple[str, ...], agent: str) -> None:
    """Passes -200, with replay pacing holding about one update per env step after the first 1,000 (each update
    counted, however many a compiled call runs); then ``aioseed eval --greedy`` of its checkpoint."""
    log, frames, mean_return = await run_to_return(["--learner.logdir", str(logdir), *flags], timeout_s=420)
    assert mean_return >= -200.0, log
    train_steps = int(re.findall(r"learner_stopped frames=\d+ train_steps=(\d+)", log)[-1])
    assert 0.8 * (frames - 1000) <= train_steps <= frames, log
    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "5", "--greedy"]).start()
    assert await evaluation.wait(timeout_s=120) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["agent"] == agent and result["policy"] == "greedy"
    assert result["mean_return"] >= -400.0, result


async def test_run_learns_pendulum_with_sac_then_evaluates_the_mean_action(tmp_path) -> None:
    logdir = tmp_path / "run"
    await _learns_pendulum_at_one_update_per_step_then_evaluates_greedily(logdir, PENDULUM_SAC, "sac")
    # SAC's networks are not exported: refused before any episode runs, so no clip is started either.
    video = tmp_path / "never.mp4"
    refused = await Process(["eval", "--logdir", str(logdir), "--episodes", "1", "--video", str(video),
                             "--export", str(tmp_path / "sac-policy")]).start()
    assert await refused.wait(timeout_s=120) == 2, refused.log
    assert "networks are not exported yet" in refused.log and not video.exists()


PENDULUM_TD3 = (
    "--learner.env", "Pendulum-v1",
    "--learner.agent", "td3",
    "--num-actors", "1", "--envs-per-actor", "4", "--envs-per-message", "4",
    "--learner.training.unroll-length", "1",
    "--learner.training.batch-size", "512",
    "--learner.training.acting", "replay",
    "--learner.td3.min-replay-size", "1000",
    "--learner.td3.minibatches", "2",
    "--learner.td3.jit-compile",
    "--learner.seed", "1",
    "--learner.return-window", "20",
    "--learner.stop.at-return", "-200",
    "--learner.stop.after-frames", "40000",
    "--learner.console.port", "0",
)
"""TD3 with CleanRL's settings but for the warm-up (1,000 uniform transitions, not 25,000): one update of 256
transitions per env step, two per compiled call."""


async def test_run_learns_pendulum_with_td3_then_evaluates_the_policys_action(tmp_path) -> None:
    await _learns_pendulum_at_one_update_per_step_then_evaluates_greedily(tmp_path / "run", PENDULUM_TD3, "td3")


async def test_a_mujoco_policy_records_an_offscreen_video_headless(tmp_path) -> None:
    """MuJoCo renders through OSMesa with no display or GPU: a short SAC run on Hopper, then an MP4 of one
    episode of its env's own frames."""
    import imageio_ffmpeg

    logdir, video = tmp_path / "run", tmp_path / "hopper.mp4"
    kwargs = '{"max_episode_steps": 40, "width": 96, "height": 80}'
    log = await run_to_end(
        ["--learner.env", "Hopper-v5", "--learner.env-kwargs", kwargs, "--learner.agent", "sac",
         "--num-actors", "1", "--envs-per-actor", "2", "--envs-per-message", "2",
         "--learner.training.unroll-length", "1", "--learner.training.batch-size", "32",
         "--learner.sac.min-replay-size", "64", "--learner.stop.after-frames", "600",
         "--learner.logdir", str(logdir), "--learner.console.port", "0"],
        timeout_s=180,
    )
    assert "Box[3] actions in [-1, 1]" in log
    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "1", "--video", str(video)]).start()
    assert await evaluation.wait(timeout_s=180) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    frames = imageio_ffmpeg.read_frames(str(video))
    assert next(frames)["size"] == (96, 80)
    assert sum(1 for _ in frames) == round(result["mean_length"]) + 1  # the first frame, then one per step


@pytest.mark.parametrize("architecture", ["impala", "sebulba"])
async def test_box_actions_train_in_impala_mode_and_sebulba_too(tmp_path, architecture) -> None:
    """IMPALA-mode actors sample and squash on their own CPU and upload the pre-squash samples; Sebulba's
    threads take the learner's actions as arrays. Both clip into the box as the gRPC path does."""
    log = await run_to_end(
        ["--architecture", architecture, "--learner.env", "Pendulum-v1", "--num-actors", "1",
         "--envs-per-actor", "4", "--envs-per-message", "4", "--learner.training.unroll-length", "16",
         "--learner.training.batch-size", "4", "--learner.stop.after-frames", "4000",
         "--learner.logdir", str(tmp_path), "--learner.console.port", "0"],
        timeout_s=180,
    )
    steps = re.findall(r"run_finished frames=\d+ .*train_steps=(\d+)", log)
    assert steps and int(steps[-1]) > 0, log
