"""Signals to a learner process: the first starts the ordered shutdown, a second exits at once."""

from __future__ import annotations

import asyncio
import signal

from aioseed.clients.actor import Actor, ActorConfig
from aioseed.commands.signals import INTERRUPTED
from tests.processes import Process


async def test_a_second_signal_exits_at_once_while_the_first_is_still_draining(tmp_path) -> None:
    """A connected actor keeps the drain waiting for its 60 s grace; the second SIGTERM ends the process at
    once with status 130 (a user's second Ctrl-C during a long final save), and says so."""
    learner = await Process(
        ["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", "--logdir", str(tmp_path),
         "--log-every-s", "0.5", "--server.shutdown-grace-s", "60"]
    ).start()
    task = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        task = asyncio.create_task(Actor(ActorConfig(learner=f"127.0.0.1:{port}", num_envs=4, envs_per_message=4)).run())
        await learner.wait_for_line(r"progress .*train_steps=[1-9]")
        learner.signal(signal.SIGTERM)
        await learner.wait_for_line(r"learner_stopping")
        learner.signal(signal.SIGTERM)
        assert await learner.wait(timeout_s=30) == INTERRUPTED, learner.log
        assert "exiting_at_once" in learner.log
    finally:
        learner.kill()
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
