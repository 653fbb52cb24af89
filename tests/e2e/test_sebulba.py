"""`aioseed run --architecture sebulba`: actor threads in the learner's process feed its batcher
directly (no gRPC stream) and CartPole learns."""

from __future__ import annotations

import re

from tests.processes import CARTPOLE_TO_195, run_to_return


async def test_sebulba_learns_cartpole_without_grpc_streams(tmp_path) -> None:
    log, _, _ = await run_to_return(["--architecture", "sebulba", "--learner.logdir", str(tmp_path / "run"), *CARTPOLE_TO_195])
    assert len(re.findall(r"stream_connected .*peer=in-process", log)) == 4, log  # 2 actors x 2 groups of 64
    assert "peer=ipv4" not in log  # nothing came over the network
