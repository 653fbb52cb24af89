"""The learner daemon: SIGTERM stops it in order (checkpoint, exit 0) and a restart resumes."""

from __future__ import annotations

import asyncio
import signal

from tests.processes import Process

from aioseed.clients.actor import Actor, ActorConfig


async def test_sigterm_checkpoints_and_a_restart_resumes(tmp_path) -> None:
    args = ["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", "--logdir", str(tmp_path), "--log-every-s", "0.5"]
    learner = await Process(args).start()
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        actor = Actor(ActorConfig(learner=f"127.0.0.1:{port}", num_envs=8, envs_per_message=8))
        task = asyncio.create_task(actor.run())
        await learner.wait_for_line(r"progress .*train_steps=[1-9]\d")
        learner.signal(signal.SIGTERM)
        saved = await learner.wait_for_line(r"checkpoint_saved frames=(\d+) .*train_steps=(\d+)")
        assert await learner.wait() == 0
        assert learner.errors() == [], learner.log
        order = [line.split()[2] for line in learner.lines if "learner_stopping" in line or "checkpoint_saved" in line]
        assert order == ["learner_stopping", "checkpoint_saved"]
        task.cancel()
    finally:
        learner.kill()

    restarted = await Process(args).start()
    try:
        restored = await restarted.wait_for_line(r"checkpoint_restored frames=(\d+) .*train_steps=(\d+)")
        assert restored.groups() == saved.groups()
        restarted.signal(signal.SIGINT)
        assert await restarted.wait() == 0
    finally:
        restarted.kill()
