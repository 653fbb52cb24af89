"""`aioseed run` whose actors all fail (an env that crashes them) stops in order and exits 1, instead of
waiting for frames that never come."""

from __future__ import annotations

import pytest
from tests.processes import Process

BROKEN = "tests.envs.corridor:BrokenCorridor-v0"


@pytest.mark.parametrize("architecture", ["seed", "sebulba"])
async def test_a_run_whose_actors_all_crash_stops_and_exits_1(tmp_path, architecture: str) -> None:
    logdir = tmp_path / "run"
    run = await Process(
        ["run", "--architecture", architecture, "--learner.env", BROKEN, "--num-actors", "2", "--envs-per-actor", "2",
         "--learner.logdir", str(logdir), "--learner.console.port", "0"]
    ).start()
    try:
        assert await run.wait(timeout_s=180) == 1, run.log  # before: it trained on, waiting, until killed
    finally:
        run.kill()
    assert "the corridor's engine crashed" in run.log and "actors_exited" in run.log
    assert "learner_stopped" in run.log and list((logdir / "checkpoints").glob("ckpt-*.index"))  # the ordered stop
