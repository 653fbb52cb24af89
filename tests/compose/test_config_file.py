"""Config files: TOML read into a command's flags (the flags given win), the resolved config written
back so that it parses to the same config, and presets that are such files."""

from __future__ import annotations

import dataclasses
import pathlib

import pytest

from aioseed.bench.config import AutotuneBench, Bench
from aioseed.cli import parse
from aioseed.commands.evaluate import EvalConfig
from aioseed.commands.run import RunConfig
from aioseed.compose import config_file
from aioseed.compose.config import LearnerConfig
from aioseed.presets import DIRECTORY, PRESETS, preset
from aioseed.server.config import StopConfig


def write(path: pathlib.Path, text: str) -> pathlib.Path:
    path.write_text(text)
    return path


def test_a_file_sets_fields_and_the_flags_given_win(tmp_path) -> None:
    path = write(
        tmp_path / "x.toml",
        'num_actors = 3\nenvs_per_actor = 4\n[learner]\nenv = "Acrobot-v1"\nseed = 7\n'
        "[learner.impala]\nlearning_rate = 5e-4\nhidden_sizes = [32, 16]\nnormalize_advantages = true\n"
        '[learner.console]\nenabled = false\n[learner.stop]\nat_return = "None"\n',
    )
    run = parse(["run", "--num-actors", "1", "--config", str(path), "--learner.seed", "9"])
    assert isinstance(run, RunConfig)
    assert (run.num_actors, run.envs_per_actor, run.learner.seed) == (1, 4, 9)  # flags win wherever they stand
    assert run.learner.env == "Acrobot-v1" and run.learner.impala.learning_rate == 5e-4
    assert run.learner.impala.hidden_sizes == (32, 16) and run.learner.impala.normalize_advantages
    assert run.learner.console.enabled is False and run.learner.stop.at_return is None
    assert run.learner.server == RunConfig().learner.server  # untouched sections keep run's defaults


def test_the_written_config_parses_back_to_the_same_config(tmp_path) -> None:
    learner = dataclasses.replace(
        preset("r2d2-cartpole").learner, logdir=tmp_path / "run", seed=3, stop=StopConfig(at_return=None, after_frames=1000)
    )
    run = dataclasses.replace(RunConfig(), learner=learner, num_actors=1, evaluation_envs=2)
    path = config_file.save(tmp_path / "run", run, "run")
    assert path == tmp_path / "run" / "config.toml" and path.read_text().startswith("# The resolved config")
    assert parse(["run", "--config", str(path)]) == run
    assert config_file.saved_learner(tmp_path / "run") == learner  # what aioseed eval reads
    assert parse(["learner", "--config", str(path)]) == learner  # a run's file configures a learner too
    assert parse(["eval", "--config", str(path), "--episodes", "3"]) == EvalConfig(logdir=tmp_path / "run", episodes=3)


def test_tokens_are_not_written_and_must_be_given_again(tmp_path) -> None:
    learner = parse(["learner", "--server.token", "s3cret", "--console.token", "c0nsole", "--logdir", str(tmp_path)])
    path = config_file.save(tmp_path, learner, "learner")
    assert "s3cret" not in path.read_text() and "c0nsole" not in path.read_text()
    with pytest.raises(config_file.ConfigFileError, match="marks --server.token, --console.token as set but does not store"):
        parse(["learner", "--config", str(path)])  # it would serve without a token
    again = parse(["learner", "--config", str(path), "--server.token", "s3cret", "--console.token", "other"])
    assert (again.server.token, again.console.token) == ("s3cret", "other")
    # A learner's file configures run's [learner]; run's learner keeps serving its actors on loopback.
    run = parse(["run", "--config", str(path), "--learner.server.token", "t", "--learner.console.token", "c"])
    assert run.learner.logdir == tmp_path and (run.learner.server.host, run.learner.server.port) == ("127.0.0.1", 0)


def test_other_commands_take_files_too(tmp_path) -> None:
    bench = parse(["bench", "autotune", "--config", str(write(tmp_path / "b.toml", 'workloads = ["pong"]\nmeasure_s = 4.0\n'))])
    assert isinstance(bench, Bench) and bench.command == AutotuneBench(workloads=("pong",), measure_s=4.0)
    actor = parse(["actor", "--config", str(write(tmp_path / "a.toml", 'env = "ALE/Pong-v5"\nnum_envs = 2\nenvs_per_message = 2\n'))])
    assert (actor.env, actor.num_envs) == ("ALE/Pong-v5", 2)


def test_mistakes_in_a_file_name_the_file_and_the_key(tmp_path) -> None:
    with pytest.raises(config_file.ConfigFileError, match=r"x.toml: unknown key learner.impala.learning_rat; did you mean learning-rate"):
        parse(["run", "--config", str(write(tmp_path / "x.toml", "[learner.impala]\nlearning_rat = 1e-3\n"))])
    renamed = r"o.toml: learner.stop-after-seconds was renamed learner.stop.after-seconds: write it as after-seconds = ... in \[learner.stop\]"
    with pytest.raises(config_file.ConfigFileError, match=renamed):
        parse(["run", "--config", str(write(tmp_path / "o.toml", "[learner]\nstop-after-seconds = 10\n"))])
    with pytest.raises(config_file.ConfigFileError, match=r"y.toml: learner must be a table"):
        parse(["run", "--config", str(write(tmp_path / "y.toml", 'learner = "x"\n'))])
    with pytest.raises(config_file.ConfigFileError, match=r"z.toml: .*line 1"):
        parse(["run", "--config", str(write(tmp_path / "z.toml", "num_actors = \n"))])
    with pytest.raises(config_file.ConfigFileError, match="not found"):
        parse(["run", "--config", str(tmp_path / "missing.toml")])
    with pytest.raises(config_file.ConfigFileError, match="configures aioseed run, not aioseed actor"):
        parse(["actor", "--config", str(write(tmp_path / "r.toml", 'command = "run"\nnum_actors = 1\n'))])


def test_a_files_list_does_not_swallow_the_commands_own_arguments(tmp_path) -> None:
    """The file's flags go before the given ones: ``--group-by learning_rate`` took report's logdirs as more keys."""
    from aioseed.results.report import ReportConfig

    config = write(tmp_path / "report.toml", 'group_by = ["learning_rate"]\n')
    report = parse(["report", "--config", str(config), "logs/a", "logs/b", "--source", "curve"])
    assert isinstance(report, ReportConfig)
    assert (report.group_by, report.runs, report.source) == (("learning_rate",), (pathlib.Path("logs/a"), pathlib.Path("logs/b")), "curve")
    with pytest.raises(config_file.ConfigFileError, match=r"r.toml: runs is given on the command line"):
        parse(["report", "--config", str(write(tmp_path / "r.toml", 'runs = ["logs/a"]\n')), "logs/b"])
    with pytest.raises(config_file.ConfigFileError, match=r"config file .*: Is a directory"):
        parse(["report", "--config", str(tmp_path), "logs/b"])


def test_presets_are_the_toml_files_shipped_and_each_parses() -> None:
    assert {p.stem for p in DIRECTORY.glob("*.toml")} == set(PRESETS) - {"none"}
    for name in PRESETS:
        run = parse(["run", "--preset", name])
        assert run.preset == name
        if name != "none":  # the learner takes the [learner] table, on its own defaults (its server's port)
            learner = parse(["learner", "--preset", name])
            assert learner == dataclasses.replace(run.learner, server=LearnerConfig().server)
    r2d2 = parse(["run", "--preset", "r2d2-cartpole", "--learner.r2d2.learning-rate", "1e-3"])
    assert r2d2.learner.agent == "r2d2" and r2d2.learner.r2d2.lstm_size == 64 and r2d2.learner.r2d2.learning_rate == 1e-3


def test_the_configuration_guides_example_parses(tmp_path) -> None:
    guide = (pathlib.Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    example = guide.split("```toml\n", 1)[1].split("```", 1)[0]
    run = parse(["run", "--config", str(write(tmp_path / "acrobot.toml", example)), "--learner.seed", "3"])
    assert (run.learner.env, run.learner.seed, run.envs_per_actor) == ("Acrobot-v1", 3, 64)
    assert run.learner.impala.hidden_sizes == (128, 128) and run.learner.stop.after_frames is None


def test_values_are_checked_once_the_file_and_the_flags_are_combined(tmp_path) -> None:
    # The default min_replay_size (256) exceeds 128, the preset's (64) does not.
    run = parse(["run", "--preset", "r2d2-cartpole", "--learner.r2d2.replay-capacity", "128"])
    assert (run.learner.r2d2.replay_capacity, run.learner.r2d2.min_replay_size) == (128, 64)
    evaluator = write(tmp_path / "e.toml", "evaluation = true\n")  # video_dir needs evaluation
    assert parse(["actor", "--config", str(evaluator), "--video-dir", str(tmp_path)]).video_dir == tmp_path


def test_a_logdir_of_another_envs_run_is_refused_and_a_moved_env_module_is_not(tmp_path) -> None:
    from aioseed.errors import InvalidInput

    write(tmp_path / "config.toml", '[learner]\nenv = "old.module:Corridor-v0"\n')
    config_file.check_same_env(tmp_path, "new.module:Corridor-v0")  # the same env, registered from a moved module
    config_file.check_same_env(tmp_path / "fresh", "CartPole-v1")  # a new logdir holds no run
    with pytest.raises(InvalidInput, match="holds a run of old.module:Corridor-v0, not CartPole-v1") as refusal:
        config_file.check_same_env(tmp_path, "CartPole-v1")
    assert f"--init-checkpoint {tmp_path}" in str(refusal.value)  # how to start from its weights all the same


def test_a_saved_config_that_predates_fields_means_the_behaviour_before_them(tmp_path) -> None:
    """An R2D2 run saved before SEED's network and loss became the defaults lists every other field: read back
    (aioseed eval, serve, run --config), it is that run, whose checkpoints fit. A hand-written table takes the
    defaults, and a saved table that has the fields keeps its values."""
    from aioseed.algos.r2d2.config import R2D2Config

    new = R2D2Config()
    assert {name: getattr(new, name) for name in R2D2Config.VALUES_BEFORE} != R2D2Config.VALUES_BEFORE
    logdir = tmp_path / "old"
    config_file.save(logdir, LearnerConfig(agent="r2d2", logdir=logdir), "learner")
    text = (logdir / "config.toml").read_text()
    for name in R2D2Config.VALUES_BEFORE:  # as a version before them wrote it
        text = "\n".join(line for line in text.splitlines() if not line.startswith(f"{name} ="))
    (logdir / "config.toml").write_text(text)
    old = config_file.saved_learner(logdir).r2d2
    assert {name: getattr(old, name) for name in R2D2Config.VALUES_BEFORE} == R2D2Config.VALUES_BEFORE
    assert old.lstm_size == new.lstm_size  # the rest as written

    run = parse(["run", "--config", str(write(tmp_path / "hand.toml", '[learner]\nagent = "r2d2"\n[learner.r2d2]\nlstm_size = 64\n'))])
    assert run.learner.r2d2 == dataclasses.replace(new, lstm_size=64)
    config_file.save(tmp_path / "now", LearnerConfig(agent="r2d2", logdir=tmp_path / "now"), "learner")
    assert config_file.saved_learner(tmp_path / "now").r2d2 == new
