"""`aioseed run --architecture sebulba`: actor threads in the learner's process feed its batcher
directly (no gRPC stream) and CartPole learns."""

from __future__ import annotations

import re

from tests.processes import Process


async def test_sebulba_learns_cartpole_without_grpc_streams(tmp_path) -> None:
    run = await Process(
        [
            "run", "--architecture", "sebulba",
            "--learner.logdir", str(tmp_path / "run"),
            "--learner.seed", "1",
            "--learner.return-window", "20",
            "--learner.stop.at-return", "195",
            "--learner.stop.after-frames", "500000",
            "--learner.console.port", "0",
        ]
    ).start()
    try:
        assert await run.wait(timeout_s=240) == 0, run.log
    finally:
        run.kill()
    log = "\n".join(run.lines)
    assert len(re.findall(r"stream_connected .*peer=in-process", log)) == 4, run.log  # 2 actors x 2 groups of 64
    assert "peer=ipv4" not in log  # nothing came over the network
    assert re.search(r"stop_condition frames=\d+ mean_return=[\d.]+ reason=return", log), run.log
    assert run.errors() == [], run.log
