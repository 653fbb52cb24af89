"""``aioseed serve`` through real processes: an actor connects as to a learner and gets the checkpoint's actions,
nothing trains or is written, and with --watch a newer checkpoint of the run is served without dropping the stream."""

from __future__ import annotations

import dataclasses
import re
import signal

import grpc
import pytest
from tests.processes import Process, console_metrics, run_to_end
from tests.waiting import until
from tests.wire import CARTPOLE, hello, refused

RUN = ("--learner.console.port", "0", "--num-actors", "1", "--envs-per-actor", "8", "--learner.seed", "1")


async def test_serve_answers_an_actor_and_loads_the_runs_newer_checkpoint_without_dropping_its_stream(tmp_path) -> None:
    logdir = tmp_path / "run"
    await run_to_end(["--learner.logdir", str(logdir), "--learner.stop.after-frames", "3000", *RUN])
    written = sorted(p.name for p in (logdir / "checkpoints").iterdir())
    serve = await Process([
        "serve", "--checkpoint", str(logdir), "--watch", "--watch-every-s", "0.2", "--server.host", "127.0.0.1",
        "--server.port", "0", "--console.port", "0", "--log-every-s", "0.5", "--display", "lines",
    ]).start()
    actor = None
    try:
        first = int((await serve.wait_for_line(r"serving .*train_steps=(\d+)")).group(1))
        port = int((await serve.wait_for_line(r"learner_listening .*port=(\d+)")).group(1))
        console = (await serve.wait_for_line(r"console_listening url='?(http://[\d.]+:\d+)")).group(1)
        actor = await Process(["actor", "--learner", f"127.0.0.1:{port}", "--num-envs", "4", "--envs-per-message", "4"]).start()
        await serve.wait_for_line(r"stream_connected .*slots=4")
        # The actor's episodes are played by the checkpoint's policy; they are evaluation episodes: nothing trains.
        await serve.wait_for_line(rf"progress .*eval_return=[\d.]+ .*serving=\d+ .*train_steps={first}\b")
        assert sorted(p.name for p in (logdir / "checkpoints").iterdir()) == written  # serving writes nothing

        # Refused calls: the collections of the cycles they leave skip TensorFlow's objects, which serve freezes once
        # started (before, each walked them all: ~200 ms of a stalled event loop, in every second of refusals).
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            for _ in range(3):
                error = await refused(channel, hello(1, dataclasses.replace(CARTPOLE, action_space=7)))
                assert error.code() == grpc.StatusCode.FAILED_PRECONDITION
        await until(lambda: console_metrics(console).get("refusals/failed_precondition") == 3 and "refusals/collect_ms" in console_metrics(console),
                    "a collection after the refusals", attempts=500)
        assert console_metrics(console)["refusals/collect_ms"] < 50

        # The run trains on and writes a newer checkpoint: served at once, and the actor's stream carries on.
        await run_to_end(["--learner.logdir", str(logdir), "--learner.stop.after-frames", "6000", *RUN])
        reloaded = int((await serve.wait_for_line(r"checkpoint_reloaded .*train_steps=(\d+)")).group(1))
        assert reloaded > first
        await serve.wait_for_line(rf"progress .*eval_return=[\d.]+ .*train_steps={reloaded}\b")
        log = "\n".join(serve.lines)
        assert "stream_closed" not in log and actor.proc.returncode is None
        assert re.search(r"progress .*episodes=0 .*frames=0 .*train_steps", log)  # no training episodes, no frames

        serve.signal(signal.SIGTERM)
        assert await serve.wait() == 0
        assert serve.errors() == [], serve.log
    finally:
        serve.kill()
        if actor is not None:
            actor.kill()



pytestmark = pytest.mark.e2e
