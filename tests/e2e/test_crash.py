"""An actor killed with SIGKILL mid-unroll: the learner serves the others, with no error log."""

from __future__ import annotations

import asyncio
import signal

from tests.processes import Process

from aioseed.clients.actor import Actor, ActorConfig


async def test_sigkilled_actor_leaves_the_learner_serving_the_others(tmp_path) -> None:
    learner = await Process(
        ["learner", "--host", "127.0.0.1", "--port", "0", "--console-port", "0", "--logdir", str(tmp_path), "--log-every-s", "0.5",
         "--slot-grace-s", "0.5"]
    ).start()
    victim = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        victim = await Process(
            ["actor", "--learner", f"127.0.0.1:{port}", "--num-envs", "4", "--envs-per-message", "2", "--name", "victim"]
        ).start()
        survivor = Actor(ActorConfig(learner=f"127.0.0.1:{port}", num_envs=4, envs_per_message=4, name="survivor"))
        task = asyncio.create_task(survivor.run())
        await learner.wait_for_line(r"stream_connected actor=victim/1")
        await learner.wait_for_line(r"progress .*train_steps=[1-9]")  # unrolls are flowing
        victim.signal(signal.SIGKILL)
        await victim.wait()
        await learner.wait_for_line(r"stream_closed actor=victim/0")
        await learner.wait_for_line(r"stream_closed actor=victim/1")
        steps_after_kill = survivor.steps
        for _ in range(500):
            if survivor.steps > steps_after_kill + 400:
                break
            await asyncio.sleep(0.01)
        assert survivor.steps > steps_after_kill + 400, "the surviving actor stopped getting actions"
        assert not task.done()
        task.cancel()
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
        assert learner.errors() == [], learner.log
    finally:
        learner.kill()
        if victim is not None:
            victim.kill()
