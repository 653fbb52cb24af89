"""`aioseed run --architecture impala`: actor processes run the policy on their CPU with pulled
parameters, upload unrolls over gRPC, and the learner's V-trace learns CartPole from them."""

from __future__ import annotations

import re

from tests.processes import CARTPOLE_TO_195, run_to_return


async def test_impala_mode_learns_cartpole(tmp_path) -> None:
    # At SEED's CartPole rate (1e-3) 2 of 25 IMPALA-mode runs collapsed past a return of 150 (policy
    # lag ~10 updates: each group's unroll acts on one version); at 5e-4 (CARTPOLE_TO_195's), 10 of 10
    # reached 195 (~165K frames).
    log, _, _ = await run_to_return(
        ["--architecture", "impala", "--learner.logdir", str(tmp_path / "run"), *CARTPOLE_TO_195]
    )
    assert len(re.findall(r"stream_connected .*peer=ipv4:127.0.0.1", log)) == 4, log  # 2 actors x 2 groups of 64
    lags = [float(lag) for lag in re.findall(r"progress .*lag=([\d.]+) ", log)]
    assert lags and all(lag >= 0 for lag in lags), log  # from the versions the actors acted with
    assert "batch=nan" in log  # the learner ran no inference batch
