"""An actor killed with SIGKILL mid-unroll: the learner serves the others, with no error log."""

from __future__ import annotations

import asyncio
import signal
import socket

from tests.processes import Process
from tests.waiting import until

from aioseed.clients.actor import Actor, ActorConfig


async def test_sigkilled_actor_leaves_the_learner_serving_the_others(tmp_path) -> None:
    learner = await Process(
        ["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", "--logdir", str(tmp_path), "--log-every-s", "0.5",
         "--server.slot-grace-s", "0.5"]
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


def free_port() -> int:
    """A port nothing listens on now, so that a restarted learner can take the same one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_sigkilled_learner_restarts_from_its_checkpoint_and_actors_reconnect(tmp_path) -> None:
    flags = ["learner", "--server.host", "127.0.0.1", "--server.port", str(free_port()), "--console.port", "0",
             "--logdir", str(tmp_path), "--log-every-s", "0.5", "--checkpoint-every-s", "1"]
    learner = await Process(flags).start()
    actor = restarted = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        actor = await Process(["actor", "--learner", f"127.0.0.1:{port}", "--num-envs", "8", "--envs-per-message", "8",
                               "--backoff-max-s", "2"]).start()
        saved = await learner.wait_for_line(r"checkpoint_saved frames=(\d+) .*train_steps=([1-9]\d*)", timeout_s=90)
        learner.signal(signal.SIGKILL)
        assert await learner.wait() == -signal.SIGKILL

        restarted = await Process(flags).start()
        restored = await restarted.wait_for_line(r"checkpoint_restored frames=(\d+) .*train_steps=(\d+)")
        # The last checkpoint before the kill (at least the one seen), not a fresh start.
        assert int(restored.group(2)) >= int(saved.group(2)) > 0
        assert int(restored.group(1)) >= int(saved.group(1)) > 0
        await restarted.wait_for_line(r"learner_listening")
        await restarted.wait_for_line(r"stream_connected", timeout_s=10)  # the same actor process, by itself
        resumed = int(restored.group(2))
        await restarted.wait_for_line(rf"progress .*train_steps=(?!{resumed}\b)\d+", timeout_s=60)
        assert actor.proc.returncode is None, "the actor was never restarted"
        restarted.signal(signal.SIGTERM)
        assert await restarted.wait() == 0
        assert restarted.errors() == [], restarted.log
    finally:
        for process in (learner, actor, restarted):
            if process is not None:
                process.kill()


async def test_a_frozen_actor_loses_its_streams_at_the_learners_keepalive(tmp_path) -> None:
    """SIGSTOP: the actor's connection stays open but answers nothing, as a peer that vanished without a
    reset. The learner's keepalive pings go unanswered and it closes the connection and its streams."""
    learner = await Process(
        ["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", "--logdir", str(tmp_path),
         "--log-every-s", "0.5", "--server.keepalive-s", "1", "--server.keepalive-timeout-s", "1"]
    ).start()
    frozen = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        frozen = await Process(
            ["actor", "--learner", f"127.0.0.1:{port}", "--num-envs", "4", "--envs-per-message", "4", "--name", "frozen"]
        ).start()
        await learner.wait_for_line(r"progress .*train_steps=[1-9]")
        frozen.signal(signal.SIGSTOP)
        # Pinged after 1 s of silence, closed 1 s later (the default: 10 s + 5 s; gRPC's own: two hours).
        await learner.wait_for_line(r"stream_closed actor=frozen/0", timeout_s=15)
        frozen.signal(signal.SIGCONT)
        await learner.wait_for_line(r"stream_connected actor=frozen/0")  # it reconnects once thawed
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
    finally:
        learner.kill()
        if frozen is not None:
            frozen.kill()


async def test_an_actor_whose_learner_freezes_loses_its_stream_at_its_own_keepalive(tmp_path) -> None:
    """SIGSTOP on the learner: its connection stays open but answers nothing, as a host that lost power. Without
    the actor's own pings its read waited forever and it never reconnected."""
    learner = await Process(
        ["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", "--logdir", str(tmp_path),
         "--log-every-s", "0.5", "--server.keepalive-s", "1"]  # the learner's ping floor: 1 s
    ).start()
    actor = None
    try:
        port = int((await learner.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        actor = await Process(
            ["actor", "--learner", f"127.0.0.1:{port}", "--num-envs", "4", "--envs-per-message", "4",
             "--keepalive-s", "1", "--keepalive-timeout-s", "1"]
        ).start()
        await learner.wait_for_line(r"progress .*train_steps=[1-9]")
        learner.signal(signal.SIGSTOP)
        await actor.wait_for_line(r"stream_lost", timeout_s=15)  # pinged after 1 s of silence, given up 1 s later
        learner.signal(signal.SIGCONT)
        reconnected = lambda: sum("stream_connected" in line for line in learner.lines) >= 2  # noqa: E731
        await until(reconnected, "the actor to be back once the learner answers again", 3000)
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 0
    finally:
        learner.kill()
        if actor is not None:
            actor.kill()


async def test_a_learner_whose_final_checkpoint_cannot_be_written_exits_1(tmp_path) -> None:
    """It exited 0, so a supervisor or a sweep took the lost training for a clean stop."""
    import shutil

    learner = await Process(
        ["learner", "--server.host", "127.0.0.1", "--server.port", "0", "--console.port", "0", "--logdir", str(tmp_path),
         "--checkpoint-every-s", "0"]
    ).start()
    try:
        await learner.wait_for_line(r"learner_listening")
        shutil.rmtree(tmp_path / "checkpoints", ignore_errors=True)
        (tmp_path / "checkpoints").write_text("a file where the checkpoints go: every write fails, root or not")
        learner.signal(signal.SIGTERM)
        assert await learner.wait() == 1
        assert any("checkpoint_failed" in line for line in learner.lines), learner.log
    finally:
        learner.kill()
