"""The pixel path learns: the Nature CNN on aioseed/Catch-v0 through real learner and actor processes."""

from __future__ import annotations

from tests.processes import Process

FRAME_BUDGET = 400_000


async def test_catch_preset_reaches_a_mean_return_of_0_9(tmp_path) -> None:
    run = await Process(
        [
            "run",
            "--preset", "catch",
            "--learner.logdir", str(tmp_path),
            "--learner.seed", "1",
            "--learner.stop.after-frames", str(FRAME_BUDGET),
            "--learner.console.port", "0",
        ]
    ).start()
    try:
        finished = await run.wait_for_line(r"stop_condition frames=(\d+) mean_return=([-\d.]+) reason=return", 240)
        assert await run.wait(timeout_s=60) == 0, run.log
    finally:
        run.kill()
    assert float(finished.group(2)) >= 0.9 and int(finished.group(1)) < FRAME_BUDGET
    assert run.errors() == [], run.log
