"""Issue 58's target: a fourth algorithm touches only its own folder and one registry line, or none at all when
another package publishes it. A toy A2C (tests/algos/toy_a2c), published under the entry-point group
``aioseed.algorithms`` by a package installed for the test, trains CartPole through ``aioseed run --learner.agent toy-a2c``."""

from __future__ import annotations

import os
import pathlib

import structlog

from aioseed.algos import registry
from tests.processes import run_to_return

ROOT = pathlib.Path(__file__).resolve().parents[2]


def installed_plugin(tmp_path: pathlib.Path, *entries: str) -> pathlib.Path:
    """A site directory holding one installed distribution whose ``aioseed.algorithms`` entry points are ``entries``."""
    info = tmp_path / "site" / "toy_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{registry.PLUGINS}]\n" + "\n".join(entries) + "\n")
    return info.parent


async def test_an_installed_algorithm_trains_cartpole_through_aioseed_run(tmp_path) -> None:
    site = installed_plugin(tmp_path, "toy-a2c = tests.algos.toy_a2c:A2C")
    args = [
        "--learner.agent", "toy-a2c", "--num-actors", "1", "--envs-per-actor", "16", "--learner.logdir", str(tmp_path / "run"),
        "--learner.seed", "1", "--learner.return-window", "20", "--learner.console.no-enabled", "--learner.no-tensorboard",
        "--learner.training.batch-size", "8", "--learner.training.unroll-length", "16",
        "--learner.stop.at-return", "100", "--learner.stop.after-frames", "400000", "--learner.display", "lines",
    ]
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    log, _, mean_return = await run_to_return(args, env=env, timeout_s=300)  # a random policy averages ~22
    assert mean_return >= 100.0 and 'agent = "toy-a2c"' in (tmp_path / "run" / "config.toml").read_text()


def test_a_plugin_that_fails_to_load_is_left_out_with_a_warning(tmp_path, monkeypatch) -> None:
    site = installed_plugin(tmp_path, "broken = tests.algos.no_such_module:ALGORITHM", "misnamed = tests.algos.toy_a2c:A2C")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(registry, "ALGORITHMS", dict(registry.ALGORITHMS))
    with structlog.testing.capture_logs() as logs:
        registry.load_plugins()
    assert {"broken", "misnamed"}.isdisjoint(registry.ALGORITHMS) and {"impala", "r2d2", "sac"} <= set(registry.ALGORITHMS)
    failed = {entry["name"]: entry["error"] for entry in logs if entry["event"] == "algorithm_plugin_failed"}
    assert failed.keys() == {"broken", "misnamed"} and "ModuleNotFoundError" in failed["broken"]
