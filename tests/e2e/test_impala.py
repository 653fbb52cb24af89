"""`aioseed run --architecture impala`: actor processes run the policy on their CPU with pulled
parameters, upload unrolls over gRPC, and the learner's V-trace learns CartPole from them."""

from __future__ import annotations

import re

import pytest

from tests.processes import CARTPOLE_TO_195, run_to_end, run_to_return


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


@pytest.mark.parametrize(("architecture", "acting"), [("seed", "bounded"), ("impala", "async")])
async def test_ppo_trains_from_the_behaviours_stored_values_on_either_side_of_the_wire(tmp_path, architecture, acting) -> None:
    """``--learner.impala.proximal behaviour``: the learner's inference (seed) or the actors' own (impala, uploaded
    as a column of each unroll) keeps each step's value, and the train step starts from them."""
    log = await run_to_end(
        ["--architecture", architecture, "--learner.env", "CartPole-v1", "--num-actors", "1",
         "--envs-per-actor", "4", "--envs-per-message", "4", "--learner.training.unroll-length", "16",
         "--learner.training.batch-size", "4", "--learner.training.acting", acting,
         "--learner.impala.epochs", "2", "--learner.impala.minibatches", "4", "--learner.impala.minibatch", "transitions",
         "--learner.impala.ppo-clip", "0.2", "--learner.impala.targets", "gae", "--learner.impala.proximal", "behaviour",
         "--learner.stop.after-frames", "3000", "--learner.logdir", str(tmp_path), "--learner.console.port", "0"],
        timeout_s=180,
    )
    steps = re.findall(r"run_finished frames=\d+ .*train_steps=(\d+)", log)
    assert steps and int(steps[-1]) >= 8 * 10, log  # >= 10 batches of 64 transitions, 2 x 4 updates each
