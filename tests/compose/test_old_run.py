"""Issue 58 moved the package's modules, not what a run keeps: a run directory written before the moves (by
commit f525714: ``aioseed run --learner.logdir R --learner.stop.after-frames 3000 --learner.stop.at-return None
--num-actors 1 --envs-per-actor 4 --envs-per-message 4 --learner.console.no-enabled --learner.seed 7
--learner.no-tensorboard --learner.impala.hidden-sizes 16 16``) still loads as a policy and resumes."""

from __future__ import annotations

import pathlib
import shutil

import numpy as np
import pytest

from aioseed.cli import parse
from aioseed.commands.run import RunConfig, train_locally

OLD_RUN = pathlib.Path(__file__).parents[1] / "fixtures" / "run-0.1-before-layout"


@pytest.fixture
def old_run(tmp_path: pathlib.Path) -> pathlib.Path:
    return pathlib.Path(shutil.copytree(OLD_RUN, tmp_path / "run"))


def test_its_policy_loads_and_acts(old_run: pathlib.Path) -> None:
    import aioseed

    policy = aioseed.load_policy(old_run, greedy=True)
    assert policy.train_steps == 4
    actions, _ = policy.act(np.zeros((3, 4), np.float32))
    assert actions.shape == (3,) and set(actions.tolist()) <= {0, 1}


async def test_it_resumes_from_its_checkpoint_with_its_config_file(old_run: pathlib.Path) -> None:
    run = parse(["run", "--config", str(old_run / "config.toml"), "--learner.logdir", str(old_run),
                 "--learner.stop.after-frames", "5000", "--learner.display", "lines"])
    assert isinstance(run, RunConfig) and run.learner.impala.hidden_sizes == (16, 16) and run.learner.seed == 7
    summary = await train_locally(run)
    assert summary.stop_reason == "frames", summary.stop_reason
    assert summary.history[0]["charts/frames"] >= 3000  # the counters came back with the weights
    assert summary.train_steps > 4 and (old_run / "checkpoints" / f"ckpt-{summary.train_steps}.index").exists()
