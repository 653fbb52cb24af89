"""Pong through learner and actor processes: ALE frames reach the learner, the Nature CNN trains."""

from __future__ import annotations

import signal

import pytest

from aioseed.envs.atari import game_name
from aioseed.envs.registry import env_spec
from tests.processes import train_through_processes


def test_ale_ids_map_to_native_game_names_and_frames_are_stacked_uint8() -> None:
    assert game_name("ALE/Pong-v5") == "pong"
    assert game_name("ALE/MsPacman-v5") == "ms_pacman"
    import ale_py
    import gymnasium as gym
    from ale_py import roms

    gym.register_envs(ale_py)
    ids = [i for i in gym.registry if i.startswith("ALE/")]
    assert len(ids) > 100 and "ALE/TicTacToe3D-v5" in ids  # its ROM is tic_tac_toe_3d, not tic_tac_toe3_d
    assert all(roms.get_rom_path(game_name(i)) is not None for i in ids)
    spec = env_spec("ALE/Pong-v5")
    assert (spec.observation_shape, spec.observation_dtype, spec.num_actions) == ((4, 84, 84), "uint8", 6)


@pytest.mark.parametrize(
    "learner_flags,actor_flags,wire",
    [
        ([], [], "obs uint8[4,84,84], 6 actions, 4 frames/step"),
        (["--learner-frame-stack", "4"], ["--atari.stack", "1"], "obs uint8[1,84,84], 6 actions, 4 frames/step"),
        (["--learner-frame-stack", "4", "--impala.lstm-size", "32"], ["--atari.stack", "1"], "obs uint8[1,84,84]"),
        (["--learner-frame-stack", "4"], ["--atari.stack", "1", "--env-backend", "envpool"], "obs uint8[1,84,84], 6 actions"),
        (
            ["--agent", "r2d2", "--learner-frame-stack", "4",
             "--r2d2.burn-in", "2", "--r2d2.min-replay-size", "4", "--r2d2.lstm-size", "32"],
            ["--atari.stack", "1"],
            "obs uint8[1,84,84]",
        ),
    ],
    ids=["actor stacking", "learner stacking", "learner stacking + LSTM", "envpool actor", "R2D2"],
)
async def test_pong_trains_through_learner_and_actor_processes(tmp_path, learner_flags, actor_flags, wire) -> None:
    await train_through_processes(
        ["--env", "ALE/Pong-v5", "--logdir", str(tmp_path), "--log-every-s", "1", "--training.unroll-length", "5",
         "--training.batch-size", "2", "--impala.reward-clipping", "abs", *learner_flags],
        ["--env", "ALE/Pong-v5", "--num-envs", "4", "--envs-per-message", "4", *actor_flags],
        wire,
        slots=4,
    )
    if learner_flags == ["--learner-frame-stack", "4"]:
        await record_a_pong_episode(tmp_path)
        await evaluate_under_a_protocol(tmp_path)
    if learner_flags[:2] == ["--agent", "r2d2"]:
        await evaluate_and_serve_r2d2(tmp_path)


async def evaluate_and_serve_r2d2(logdir) -> None:
    """R2D2's Pong checkpoint: aioseed eval --protocol seed acts at SEED's epsilon 0.001 on the learner's stacks of
    four, and aioseed serve answers an actor's single frames with it (stacked on the server's side, as in training)."""
    import json

    from tests.processes import Process

    evaluation = await Process(["eval", "--logdir", str(logdir), "--protocol", "seed", "--episodes", "1", "--format", "json"]).start()
    assert await evaluation.wait(timeout_s=300) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert (result["agent"], result["policy"], result["epsilon"]) == ("r2d2", "epsilon 0.001", 0.001)
    protocol = result["protocol"]
    assert (protocol["name"], protocol["sticky_action_probability"], protocol["noop_max"]) == ("seed", 0.0, 30)
    assert -21 <= result["mean_return"] <= 21 and result["frames"] > 0

    serve = await Process([
        "serve", "--checkpoint", str(logdir), "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0",
        "--log-every-s", "0.5", "--display", "lines",
    ]).start()
    actor = None
    try:
        port = int((await serve.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        assert "obs uint8[1,84,84]" in "\n".join(serve.lines)  # the wire carries single frames
        actor = await Process([
            "actor", "--learner", f"127.0.0.1:{port}", "--env", "ALE/Pong-v5", "--atari.stack", "1", "--num-envs", "2",
            "--envs-per-message", "2",
        ]).start()
        await serve.wait_for_line(r"stream_connected .*slots=2")
        await serve.wait_for_line(r"progress batch=[1-9].* frames=0 ")  # inference batches served; nothing trains
        assert actor.proc.returncode is None
        serve.signal(signal.SIGTERM)
        assert await serve.wait() == 0
        assert serve.errors() == [], serve.log
    finally:
        serve.kill()
        if actor is not None:
            actor.kill()


async def evaluate_under_a_protocol(logdir) -> None:
    """aioseed eval --protocol machado: the result says how it was measured (sticky actions 0.25, no no-op
    starts, full episodes), which checkpoint and which code, and is kept in the run's logdir."""
    import json

    from aioseed import __version__
    from aioseed.compose import config_file
    from tests.processes import Process

    evaluation = await Process(["eval", "--logdir", str(logdir), "--protocol", "machado", "--episodes", "1", "--format", "json"]).start()
    assert await evaluation.wait(timeout_s=300) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    protocol = result["protocol"]
    assert (protocol["name"], protocol["sticky_action_probability"], protocol["noop_max"], protocol["episodic_life"]) == (
        "machado", 0.25, 0, False
    )
    assert (protocol["episodes"], protocol["policy"], result["episodes"], len(result["returns"])) == (1, "sampled", 1, 1)
    played = result["atari"]  # the settings the evaluation env was made with
    assert (played["sticky_action_probability"], played["noop_max"], played["episodic_life"], played["stack"]) == (0.25, 0, False, 4)
    assert result["frames"] > 0 and result["aioseed_version"] == __version__
    assert result["run_provenance"] == config_file.saved_provenance(logdir) and result["run_provenance"]["aioseed"] == __version__
    kept = logdir / "evaluations" / f"ALE-Pong-v5_machado_{result['frames']}_1ep.json"
    assert result.pop("written") == str(kept) and json.loads(kept.read_text()) == result


async def record_a_pong_episode(logdir) -> None:
    """aioseed eval --video on the checkpoint: the policy sees the learner's 84 x 84 stacks, the clip
    holds the 210 x 160 colour screen, one frame per step plus the first."""
    import json

    import imageio_ffmpeg
    import numpy as np

    from tests.processes import Process

    video = logdir / "pong.mp4"
    evaluation = await Process(["eval", "--logdir", str(logdir), "--episodes", "1", "--video", str(video), "--format", "json"]).start()
    assert await evaluation.wait(timeout_s=300) == 0, evaluation.log
    result = json.loads(await evaluation.stdout())
    assert result["env"] == "ALE/Pong-v5" and -21 <= result["mean_return"] <= 21 and result["video"] == str(video)
    frames = imageio_ffmpeg.read_frames(str(video))
    assert next(frames)["size"] == (160, 210)
    decoded = [np.frombuffer(f, np.uint8).reshape(210, 160, 3) for f in frames]
    assert len(decoded) == round(result["mean_length"]) + 1
    assert any((f[..., 0].astype(int) - f[..., 2]).any() for f in decoded[:5])  # colour


def test_frames_per_step_is_part_of_the_spec_and_survives_the_wire() -> None:
    from aioseed.spec import EnvSpec

    pong = env_spec("ALE/Pong-v5")
    assert pong.frames_per_step == 4 and "4 frames/step" in pong.describe()
    assert EnvSpec.from_proto(pong.to_proto()) == pong
    assert env_spec("CartPole-v1").frames_per_step == 1


def test_atari_frames_stack_by_shifting_and_episodes_end_with_a_final_row() -> None:
    import numpy as np

    from aioseed.clients.env_group import EnvGroup
    from aioseed.envs.atari import AtariConfig, make_atari_vector_env
    from aioseed.types import FINAL, TRUNCATED

    config = AtariConfig(noop_max=0, sticky_action_probability=0.0, max_episode_frames=4 * 40)
    envs = make_atari_vector_env("ALE/Pong-v5", 2, config)
    group = EnvGroup(envs, env_spec("ALE/Pong-v5"), np.array([1, 2], np.uint64), seed=0)
    previous = group.observations.copy()
    for step in range(60):
        group.step(np.zeros(2, np.int32))
        obs = group.observations
        assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
        if group.flags.any():
            break
        # the newest frame enters last; the older three shift forward
        np.testing.assert_array_equal(obs[:, :3], previous[:, 1:])
        previous = obs.copy()
    assert step == 39, "the 160-frame limit ends the episode after 40 steps of 4 frames"
    assert group.flags.tolist() == [TRUNCATED | FINAL] * 2
    group.step(np.zeros(2, np.int32))  # the autoreset step: the new episode's first observation
    assert group.flags.tolist() == [0, 0] and group.rewards.tolist() == [0.0, 0.0]
    assert group.steps == 2 * 40


async def test_the_ppo_preset_acts_synchronously_through_real_processes(tmp_path) -> None:
    """--preset atari-ppo: one actor process steps 8 Pong envs in lockstep, and every train step starts on
    the policy that acted its batch (lag 0 at the first of 16 updates, so 7.5 on average; KL 0)."""
    import re

    from tests.processes import Process

    run = await Process(
        ["run", "--preset", "atari-ppo", "--learner.logdir", str(tmp_path), "--learner.training.unroll-length", "16",
         "--learner.stop.after-frames", "4000", "--learner.console.no-enabled", "--learner.display", "lines",
         "--learner.log-every-s", "0.5"]
    ).start()
    try:
        assert await run.wait(timeout_s=300) == 0, run.log
    finally:
        run.kill()
    trained = re.findall(r"progress .*?kl=([-\d.e]+) .*?lag=([\d.]+)", run.log)
    assert trained, run.log
    assert all(float(lag) == 7.5 and abs(float(kl)) < 1e-3 for kl, lag in trained), trained
    assert run.errors() == [], run.log
