"""Pong through learner and actor processes: ALE frames reach the learner, the Nature CNN trains."""

from __future__ import annotations

import signal

from tests.processes import Process

from aioseed.clients.atari import game_name
from aioseed.clients.envs import env_spec


def test_ale_ids_map_to_native_game_names_and_frames_are_stacked_uint8() -> None:
    assert game_name("ALE/Pong-v5") == "pong"
    assert game_name("ALE/MsPacman-v5") == "ms_pacman"
    spec = env_spec("ALE/Pong-v5")
    assert (spec.observation_shape, spec.observation_dtype, spec.num_actions) == ((4, 84, 84), "uint8", 6)


async def test_pong_trains_through_learner_and_actor_processes(tmp_path) -> None:
    learner = await Process(
        ["learner", "--env", "ALE/Pong-v5", "--host", "127.0.0.1", "--port", "0", "--console-port", "0",
         "--logdir", str(tmp_path), "--log-every-s", "1", "--training.unroll-length", "5",
         "--training.batch-size", "2", "--agent.reward-clipping", "abs_one"]
    ).start()
    actor = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        assert "obs uint8[4,84,84], 6 actions, 4 frames/step" in "\n".join(learner.lines)
        actor = await Process(
            ["actor", "--learner", f"127.0.0.1:{port}", "--env", "ALE/Pong-v5", "--num-envs", "4",
             "--envs-per-message", "4"]
        ).start()
        await learner.wait_for_line(r"stream_connected .*slots=4")
        await learner.wait_for_line(r"progress .*train_steps=[1-9]", timeout_s=120)
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
        assert learner.errors() == [], learner.log
    finally:
        learner.kill()
        if actor is not None:
            actor.kill()


def test_frames_per_step_is_part_of_the_spec_and_survives_the_wire() -> None:
    from aioseed.spec import EnvSpec

    pong = env_spec("ALE/Pong-v5")
    assert pong.frames_per_step == 4 and "4 frames/step" in pong.describe()
    assert EnvSpec.from_proto(pong.to_proto()) == pong
    assert env_spec("CartPole-v1").frames_per_step == 1
