"""Sweep files: what they set, and mistakes that name the file and the key."""

from __future__ import annotations

import functools
import pathlib

import pytest

from aioseed.compose.config_file import ConfigFileError
from aioseed.sweep.config import read_sweep
from aioseed.sweep.study import setting_slug, total_trials, trial_table
from aioseed.tables import merged, nested

CATCH = pathlib.Path(__file__).parents[2] / "docs" / "sweeps" / "catch-lr.toml"


def write(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    return path


def test_the_documented_sweep_reads_and_each_trial_is_a_run_config(tmp_path) -> None:
    sweep = read_sweep(CATCH)
    assert (sweep.sampler, sweep.seeds, sweep.preset, sweep.budget_frames) == ("grid", (0, 1, 2), "catch", 40000)
    assert sweep.keys == ("learner.impala.learning_rate",) and total_trials(sweep) == 6
    table = trial_table(sweep, {"learner.impala.learning_rate": 0.0}, 2, tmp_path / "t")
    assert table["learner"]["impala"] == {"learning_rate": 0.0} and table["learner"]["seed"] == 2
    assert table["learner"]["stop"] == {"at_return": 0.9, "after_frames": 40000} and table["learner"]["console"] == {"enabled": False}
    assert table["num_actors"] == 1 and table["learner"]["logdir"] == str(tmp_path / "t")
    from aioseed.cli import parse
    from aioseed.sweep.trial import write_config

    run = parse(["run", "--preset", "catch", "--config", str(write_config(tmp_path / "t", table))])
    assert run.learner.impala.learning_rate == 0.0 and run.learner.seed == 2 and run.learner.impala.network == "nature_cnn"


@pytest.mark.parametrize(
    "name,env,arm,trials,envs",
    [("hopper-sac", "Hopper-v5", {"learner.sac.acting_ahead": 8}, 10, 1), ("halfcheetah-sac", "HalfCheetah-v5", {"learner.sac.minibatches": 4}, 2, 4)],
)
def test_the_sac_sweeps_keep_their_seeds_to_commit_and_each_trial_is_a_sac_run(tmp_path, name, env, arm, trials, envs) -> None:
    from aioseed.cli import parse
    from aioseed.sweep.trial import write_config

    sweep = read_sweep(CATCH.with_name(f"{name}.toml"))
    assert sweep.keep == pathlib.Path(f"docs/results/{name}-seeds") and total_trials(sweep) == trials
    table = trial_table(sweep, arm, 3, tmp_path / "t")
    run = parse(["run", "--preset", sweep.preset, "--config", str(write_config(tmp_path / "t", table))])
    assert (run.learner.env, run.learner.agent, run.learner.stop.after_frames, run.learner.sac.checkpoint_replay) == (env, "sac", 300000, True)
    assert (run.envs_per_actor, run.envs_per_message, run.learner.sac.minibatches, run.learner.seed) == (envs, envs, 4, 3)
    assert all(functools.reduce(getattr, key.split("."), run) == value for key, value in arm.items())


def test_settings_get_readable_directory_names_and_tables_nest_and_merge() -> None:
    assert setting_slug({"learner.impala.learning_rate": 0.001, "learner.impala.entropy_cost": 0.01}) == "entropy_cost-0.01_learning_rate-0.001"
    assert setting_slug({"learner.env": "ALE/Pong-v5"}) == "env-ALE_Pong-v5"
    assert nested({"a.b.c": 1, "a.d": 2}) == {"a": {"b": {"c": 1}, "d": 2}}
    assert merged({"a": {"b": 1, "c": 2}, "x": 0}, {"a": {"b": 3}}) == {"a": {"b": 3, "c": 2}, "x": 0}


@pytest.mark.parametrize(
    "text,message",
    [
        ("[sweep]\nsampler = 'bayes'\n", "sweep.sampler must be grid, random or tpe"),
        ("[sweep]\ncolour = 1\n", "unknown key\\(s\\) sweep.colour"),
        ("[sweeps]\n", "unknown table\\(s\\) sweeps"),
        ("[sweep]\nseeds = [1, 1]\n[grid]\nx = [1]\n", "sweep.seeds must be distinct seeds"),
        ("[grid]\n'learner.seed' = []\n", "grid.learner.seed must be a list of distinct values"),
        ("[grid]\n'learner.impala.learning_rate' = 0.001\n", "grid.learner.impala.learning_rate must be a list of distinct values"),
        ("[sweep]\nsampler = 'tpe'\n[grid]\nx = [1]\n", "space must be a \\[space\\] table and no \\[grid\\] for sampler tpe"),
        ("[sweep]\nsampler = 'random'\n[space]\nx = {low = 0, high = 1, log = true}\n", "space.x must be low > 0 on a log scale"),
        ("[grid]\nx = [1, 2]\n", "run.learner.stop.after_frames must be every trial's budget"),
        ("[sweep]\nsampler = 'random'\ntrials = 7\n[space]\nx = {choices = [1, 2]}\ny = {low = 1, high = 3, integer = true}\n",
         "sweep.trials must be at most the 6 settings its \\[space\\] holds"),
        ("[sweep]\ndirectory = 3\n", "sweep.directory must be a directory"),
        ("[sweep]\nstorage = ''\n[grid]\nx = [1]\n[run.learner.stop]\nafter_frames = 10\n", "sweep.storage must be an Optuna storage URL"),
        ("[run]\nlearner = 1\n[grid]\nx = [1]\n", "run.learner must be a table"),
    ],
)
def test_mistakes_name_the_file_and_the_key(tmp_path, text: str, message: str) -> None:
    with pytest.raises(ConfigFileError, match=f"sweep.toml: {message}"):
        read_sweep(write(tmp_path, text))


def test_a_wrong_run_key_fails_before_any_trial_runs(tmp_path) -> None:
    from aioseed.sweep.study import check

    path = write(tmp_path, f"[sweep]\ndirectory = '{tmp_path}'\n[grid]\n'learner.impala.learnig_rate' = [1]\n[run.learner.stop]\nafter_frames = 10\n")
    with pytest.raises(ConfigFileError, match="unknown key learner.impala.learnig_rate"):
        check(read_sweep(path))

