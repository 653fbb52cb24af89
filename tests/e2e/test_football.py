"""Google Research Football through learner and actor processes: the real engine, a few unrolls, a train step."""

from __future__ import annotations

import signal

import pytest

from tests.processes import Process

SCENARIO = "football:academy_empty_goal_close"


@pytest.mark.parametrize(
    "flags,wire",
    [
        (["--football.stacked"], "obs uint8[72,96,16], 19 actions"),
        (["--football.representation", "simple115v2", "--football.rewards", "scoring,checkpoints"], "obs float32[115], 19 actions"),
    ],
    ids=["stacked SMM + Football ResNet", "simple115v2 + MLP"],
)
async def test_football_trains_through_learner_and_actor_processes(tmp_path, flags, wire) -> None:
    learner = await Process(
        ["learner", "--env", SCENARIO, "--host", "127.0.0.1", "--port", "0", "--console-port", "0",
         "--logdir", str(tmp_path), "--log-every-s", "1", "--training.unroll-length", "8",
         "--training.batch-size", "2", *flags]
    ).start()
    actor = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        assert wire in "\n".join(learner.lines)
        actor = await Process(
            ["actor", "--learner", f"127.0.0.1:{port}", "--env", SCENARIO, "--num-envs", "2",
             "--envs-per-message", "2", *flags]
        ).start()
        await learner.wait_for_line(r"stream_connected .*slots=2")
        await learner.wait_for_line(r"progress .*train_steps=[1-9]", timeout_s=180)
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
        assert learner.errors() == [], learner.log
    finally:
        learner.kill()
        if actor is not None:
            actor.kill()
