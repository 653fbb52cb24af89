"""aioseed report: runs grouped by the settings they differ in, scores human-normalised for Atari,
rliable's intervals that tell a learning setting from a broken one, and its plots."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import statistics

import numpy as np
import pytest

from aioseed.commands.run import RunConfig
from aioseed.compose import config_file
from aioseed.results.atari_scores import reference, references
from aioseed.results.report import ReportConfig, report, table


def a_run(root: pathlib.Path, name: str, env: str, seed: int, learning_rate: float, returns: list[float], frames: int = 1000) -> pathlib.Path:
    """A logdir as a run leaves it: its config.toml, and one kept evaluation (aioseed eval's result)."""
    logdir = root / name
    base = RunConfig()
    learner = dataclasses.replace(
        base.learner, env=env, seed=seed, logdir=logdir, impala=dataclasses.replace(base.learner.impala, learning_rate=learning_rate)
    )
    config_file.save(logdir, dataclasses.replace(base, learner=learner), "run")
    (logdir / "evaluations").mkdir()
    result = {
        "env": env, "frames": frames, "episodes": len(returns), "policy": "sampled", "returns": returns,
        "mean_return": sum(returns) / len(returns), "protocol": {"name": "seed"},
    }
    (logdir / "evaluations" / f"x_seed_{frames}.json").write_text(json.dumps(result))
    return logdir


def test_the_reference_table_holds_the_57_games_with_their_published_scores() -> None:
    assert len(references()) == 57
    pong = reference("ALE/Pong-v5")
    assert (pong.random, pong.human) == (-20.7, 14.6) and reference("ALE/Pong-v4") == pong
    assert reference("CartPole-v1") is None
    assert all(r.human > r.random for r in references().values())


def test_settings_are_told_apart_by_their_intervals_and_the_plots_are_written(tmp_path) -> None:
    for seed, (good, broken) in enumerate([(0.9, -0.7), (0.95, -0.6), (0.85, -0.75)]):
        a_run(tmp_path / "sweep", f"good-{seed}", "aioseed/Catch-v0", seed, 1e-3, [good, good])
        a_run(tmp_path / "sweep", f"broken-{seed}", "aioseed/Catch-v0", seed, 0.0, [broken])
    result = report(ReportConfig(runs=(tmp_path / "sweep",), out=tmp_path / "report", reps=200))
    settings = result["settings"]
    assert set(settings) == {"impala.learning_rate=0.001", "impala.learning_rate=0.0"}  # seeds and logdirs are not settings
    good, broken = settings["impala.learning_rate=0.001"], settings["impala.learning_rate=0.0"]
    assert good["runs_per_task"] == broken["runs_per_task"] == 3 and result["scores"] == "raw returns"
    assert good["Mean"]["point"] == pytest.approx(0.9) and broken["Mean"]["point"] == pytest.approx(-2.05 / 3)
    assert broken["IQM"]["high"] < good["IQM"]["low"]
    assert good["IQM"]["low"] <= good["IQM"]["point"] <= good["IQM"]["high"]
    assert "Optimality Gap" not in good  # raw returns have no "optimal"
    for name in ("aggregates.png", "profiles.png", "report.json"):
        assert (tmp_path / "report" / name).stat().st_size > 1000 or name == "report.json"
    assert json.loads((tmp_path / "report" / "report.json").read_text())["settings"] == settings
    printed = table(result)
    assert "impala.learning_rate=0.001     3  0.900 [" in printed and "eval seed (2 episodes, sampled)" in printed


def test_atari_games_are_aggregated_as_human_normalised_scores(tmp_path) -> None:
    pong, breakout = reference("ALE/Pong-v5"), reference("ALE/Breakout-v5")
    for seed in range(2):
        a_run(tmp_path, f"pong-{seed}", "ALE/Pong-v5", seed, 1e-3, [pong.human])  # HNS 1
        a_run(tmp_path, f"breakout-{seed}", "ALE/Breakout-v5", seed, 1e-3, [breakout.random])  # HNS 0
    result = report(ReportConfig(runs=(tmp_path,), out=None, reps=100))
    (setting,) = result["settings"].values()
    assert result["scores"] == "human-normalised" and result["tasks"] == ["ALE/Breakout-v5", "ALE/Pong-v5"]
    assert setting["Mean"]["point"] == pytest.approx(0.5) and setting["Optimality Gap"]["point"] == pytest.approx(0.5)
    assert sorted(run["hns"] for run in result["runs"]) == pytest.approx([0, 0, 1, 1])


def test_raw_returns_of_different_envs_are_refused_and_so_is_a_missing_task(tmp_path) -> None:
    a_run(tmp_path / "mixed", "a", "CartPole-v1", 0, 1e-3, [500.0])
    a_run(tmp_path / "mixed", "b", "aioseed/Catch-v0", 0, 1e-3, [1.0])
    with pytest.raises(ValueError, match="no common scale"):
        report(ReportConfig(runs=(tmp_path / "mixed",), out=None))
    a_run(tmp_path / "gap", "a", "ALE/Pong-v5", 0, 1e-3, [0.0])
    a_run(tmp_path / "gap", "b", "ALE/Breakout-v5", 0, 0.0, [0.0])
    a_run(tmp_path / "gap", "c", "ALE/Pong-v5", 0, 0.0, [0.0])
    with pytest.raises(ValueError, match="has no run of ALE/Breakout-v5"):
        report(ReportConfig(runs=(tmp_path / "gap",), out=None))
    with pytest.raises(FileNotFoundError, match="holds no run"):
        report(ReportConfig(runs=(tmp_path / "nothing-here",), out=None))


def test_a_runs_score_is_its_longest_evaluation_of_the_latest_checkpoint(tmp_path) -> None:
    """A quick check after a full evaluation of the same checkpoint does not become the run's score."""
    import os

    from aioseed.results.runs import read_run

    logdir = a_run(tmp_path, "run", "aioseed/Catch-v0", 0, 1e-3, [0.5] * 30, frames=1000)
    quick = {"env": "aioseed/Catch-v0", "frames": 1000, "episodes": 1, "policy": "sampled", "returns": [-1.0],
             "mean_return": -1.0, "protocol": {"name": "seed"}}
    (logdir / "evaluations" / "x_seed_1000_1ep.json").write_text(json.dumps(quick))
    os.utime(logdir / "evaluations" / "x_seed_1000_1ep.json", (2e9, 2e9))  # the newer file
    run = read_run(logdir)
    assert run.score == 0.5 and run.source == "eval seed (30 episodes, sampled)"  # before: -1.0, the newest
    later = {**quick, "frames": 2000}  # a later checkpoint's evaluation wins, however short
    (logdir / "evaluations" / "x_seed_2000_1ep.json").write_text(json.dumps(later))
    assert read_run(logdir).score == -1.0


def resumed_run(tmp_path: pathlib.Path) -> pathlib.Path:
    """A run of two sessions with a curve and no evaluation: 3 episodes of 1.0 to frames 30, then one of -1.0."""
    import shutil

    from aioseed.server.reporting.summaries import SummaryWriter

    logdir = a_run(tmp_path, "run", "aioseed/Catch-v0", 0, 1e-3, [0.0])
    shutil.rmtree(logdir / "evaluations")
    sessions = [(30, 1.0, [(10, 1.0), (20, 1.0), (30, 1.0)]), (40, -1.0, [(40, -1.0)])]  # resumed at frames 30
    for number, (frames, mean, ended) in enumerate(sessions):
        SummaryWriter(tmp_path / f"session{number}")({"charts/return": mean}, frames, ended)
        (written,) = (tmp_path / f"session{number}" / "tensorboard").glob("events.out.tfevents.*")
        (logdir / "tensorboard").mkdir(exist_ok=True)
        written.rename(logdir / "tensorboard" / f"events.out.tfevents.{1000 + number}.host")  # in session order
    return logdir


def test_a_resumed_runs_curve_score_is_over_its_last_episodes_across_sessions(tmp_path) -> None:
    """The learner's own mean return starts over at each resumed session: the score used to be the mean of
    the few episodes since the restart."""
    from aioseed.results.runs import read_run

    run = read_run(resumed_run(tmp_path))
    assert (run.score, run.frames, run.source) == (0.5, 40, "curve (last 4 episodes)")


def test_a_kept_run_scores_as_its_logdir_did_from_its_few_committable_files(tmp_path) -> None:
    from aioseed.results.kept import keep
    from aioseed.results.runs import read_run

    logdir = resumed_run(tmp_path)
    kept = keep(logdir, tmp_path / "kept" / "seed-0", window=100)
    assert sorted(p.name for p in kept.iterdir()) == ["config.toml", "curve.csv", "evaluations"]
    run = read_run(kept)
    assert (run.score, run.frames, run.source) == (0.5, 40, "kept curve (last 100 episodes)")
    assert run.settings == read_run(logdir).settings
    (kept / "curve.csv").write_text("frames,seconds,mean_return,eval_return\n40,1.0,half,\n")
    with pytest.raises(ValueError, match="curve.csv row 2 is not a curve point"):
        read_run(kept)


def a_config_without_env(logdir: pathlib.Path) -> None:
    """A kept run (scored by its curve) whose config.toml lost its env."""
    from aioseed.results.curves import Point, write_csv

    for evaluation in (logdir / "evaluations").iterdir():
        evaluation.unlink()
    write_csv([Point(40, 1.0, 0.5)], logdir / "curve.csv")
    (logdir / "config.toml").write_text('command = "run"\n[learner]\nseed = 1\n')


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda logdir: next((logdir / "evaluations").iterdir()).write_text("{"), "JSONDecodeError"),
        (lambda logdir: next((logdir / "evaluations").iterdir()).write_text('{"frames": 10}'), "KeyError"),
        (lambda logdir: a_config_without_env(logdir), "KeyError: 'env'"),
    ],
)
def test_a_damaged_run_is_a_users_error_naming_it_not_a_crash(tmp_path, damage, message) -> None:
    """aioseed report prints a UserError as one line with exit status 2; a KeyError or a JSON error was a traceback."""
    from aioseed.errors import InvalidInput
    from aioseed.results.runs import read_run

    logdir = a_run(tmp_path, "damaged", "aioseed/Catch-v0", 0, 1e-3, [0.5])
    damage(logdir)
    with pytest.raises(InvalidInput, match=f"{logdir}: a damaged run \\({message}"):
        read_run(logdir)


def test_group_by_takes_keys_as_the_flags_spell_them(tmp_path) -> None:
    from aioseed.results.runs import group, read_run

    runs = [read_run(a_run(tmp_path, f"r{i}", "aioseed/Catch-v0", i, rate, [0.5])) for i, rate in enumerate([1e-3, 1e-3, 3e-4])]
    for name in ("impala.learning-rate", "learner.impala.learning-rate", "learner.impala.learning_rate"):
        assert sorted(len(members) for members in group(runs, [name]).values()) == [1, 2], name


def a_kept_run(root: pathlib.Path, name: str, seed: int, learning_rate: float, curve: list[tuple[int, float]]) -> pathlib.Path:
    """A kept run (``aioseed sweep``'s keep): its config.toml and its curve.csv of (frames, mean return)."""
    from aioseed.results.curves import Point, write_csv

    logdir = a_run(root, name, "Hopper-v5", seed, learning_rate, [curve[-1][1]])
    for evaluation in (logdir / "evaluations").iterdir():
        evaluation.unlink()
    write_csv([Point(frames, frames / 100, value) for frames, value in curve], logdir / "curve.csv")
    return logdir


def test_curves_are_drawn_over_the_frames_every_run_reached_with_a_band_and_references_get_a_verdict(tmp_path) -> None:
    """Three seeds whose curves rise to 2,000-2,400 and end at different frames: the mean curve spans 10K-90K
    frames (the latest start to the earliest end); against CleanRL=2340 the mean's interval holds it (level)."""
    from aioseed.results.aggregate import scores
    from aioseed.results.efficiency import efficiency
    from aioseed.results.runs import group, read_run

    ends = [(90_000, 2000.0), (100_000, 2400.0), (120_000, 2300.0)]
    for seed, (end, final) in enumerate(ends):
        a_kept_run(tmp_path / "sweep", f"seed-{seed}", seed, 1e-3, [(10_000 if seed else 5_000, 0.0), (end, final)])
    result = report(ReportConfig(runs=(tmp_path / "sweep",), out=tmp_path / "report", reps=200, reference=("CleanRL=2340", "far=9000", "low=100")))
    (setting,) = result["settings"].values()
    assert setting["Mean"]["point"] == pytest.approx(2233.33, abs=0.01)
    assert setting["references"] == {
        "CleanRL": {"score": 2340.0, "mean": "level"}, "far": {"score": 9000.0, "mean": "below"}, "low": {"score": 100.0, "mean": "above"},
    }
    half = 4.302653 * statistics.stdev(final for _, final in ends) / 3**0.5  # Student's t, 2 degrees of freedom
    assert (setting["mean_t"]["low"], setting["mean_t"]["high"]) == pytest.approx((2233.33 - half, 2233.33 + half), abs=0.01)
    printed = table(result)
    assert "the mean 2233.333 [1716.2" in printed and "is level with CleanRL's 2340 (over 3 runs: the bootstrap intervals" in printed
    assert "is below far's 9000" in printed
    assert (tmp_path / "report" / "curves.png").stat().st_size > 1000 and str(tmp_path / "report" / "curves.png") in result["files"]

    runs = [read_run(logdir) for logdir in sorted((tmp_path / "sweep").iterdir())]
    groups = group(runs)
    (curves,) = efficiency(groups, scores(groups), reps=200, seed=0).values()
    assert (curves.frames[0], curves.frames[-1]) == (10_000, 90_000) and curves.runs.shape == (3, 1, 100)
    at_end = [2000.0, 2400.0 * 80 / 90, 2300.0 * 80 / 110]  # each run's line between its own points, at 90K
    assert curves.runs[:, 0, -1] == pytest.approx(at_end) and curves.point[-1] == pytest.approx(sum(at_end) / 3)
    assert (curves.low <= curves.point + 1e-9).all() and (curves.point <= curves.high + 1e-9).all() and curves.high[-1] > curves.low[-1]


def test_a_verdict_reads_the_means_t_interval_not_a_bootstrap_of_a_few_runs(tmp_path) -> None:
    """Two seeds at 2,400 and 2,500: a percentile bootstrap of two runs spans just [2400, 2500], wholly above 2,340,
    though two runs say little; the t interval (1 degree of freedom, 2450 +- 635) holds it. One run: no verdict."""
    for seed, final in enumerate((2400.0, 2500.0)):
        a_kept_run(tmp_path / "two", f"seed-{seed}", seed, 1e-3, [(1_000, 0.0), (10_000, final)])
    result = report(ReportConfig(runs=(tmp_path / "two",), out=None, reps=200, reference=("CleanRL=2340",)))
    (setting,) = result["settings"].values()
    assert setting["Mean"]["low"] > 2340.0  # the bootstrap's interval alone would say above
    assert setting["mean_t"]["low"] == pytest.approx(2450.0 - 12.706205 * 50.0, abs=0.01)
    assert setting["references"]["CleanRL"]["mean"] == "level"

    a_kept_run(tmp_path / "one", "seed-0", 0, 1e-3, [(1_000, 0.0), (10_000, 9000.0)])
    result = report(ReportConfig(runs=(tmp_path / "one",), out=None, reps=200, reference=("CleanRL=2340",)))
    (setting,) = result["settings"].values()
    assert setting["references"]["CleanRL"]["mean"] == "unknown" and "one run has no interval to set against CleanRL's 2340" in table(result)
    assert (setting["mean_t"]["low"], setting["mean_t"]["high"]) == (None, None)  # null in report.json: strict JSON has no NaN


def test_a_settings_interval_is_the_same_each_time_and_does_not_depend_on_the_other_settings(tmp_path) -> None:
    """Each setting draws its own resamples from --seed (rliable 1.2 draws them from NumPy's global generator, not
    the random_state it is given): the same report twice agrees, and adding a setting leaves the others' as they were."""
    for seed, final in enumerate((1.0, 5.0, 2.0, 8.0)):
        a_kept_run(tmp_path / "runs", f"b-{seed}", seed, 1e-3, [(1_000, 0.0), (10_000, final)])
    by_rate = ("impala.learning_rate",)
    np.random.seed(1)  # whatever state the process's global generator is in
    alone = report(ReportConfig(runs=(tmp_path / "runs",), group_by=by_rate, out=None, reps=100))
    np.random.seed(2)
    assert report(ReportConfig(runs=(tmp_path / "runs",), group_by=by_rate, out=None, reps=100))["settings"] == alone["settings"]
    for seed, final in enumerate((3.0, 4.0, 9.0)):
        a_kept_run(tmp_path / "runs", f"a-{seed}", seed, 1e-4, [(1_000, 0.0), (10_000, final)])
    both = report(ReportConfig(runs=(tmp_path / "runs",), group_by=by_rate, out=None, reps=100))
    (label,) = alone["settings"]
    assert len(both["settings"]) == 2 and both["settings"][label]["Mean"] == alone["settings"][label]["Mean"]


def test_a_reference_that_is_not_name_equals_score_is_refused_in_one_line(capsys) -> None:
    from aioseed.cli import main

    with pytest.raises(ValueError, match="give NAME=SCORE"):
        ReportConfig(runs=(pathlib.Path("x"),), reference=("CleanRL",))
    with pytest.raises(SystemExit) as exited:
        main(["report", "somewhere", "--reference", "CleanRL=lots"])
    assert exited.value.code == 2 and "--reference 'CleanRL=lots': give NAME=SCORE" in " ".join(capsys.readouterr().err.replace("│", " ").split())


def test_a_config_key_added_since_older_runs_and_unset_in_newer_ones_names_no_setting(tmp_path) -> None:
    import tomli_w

    from aioseed.results.runs import group, read_run

    older, newer = (a_run(tmp_path, name, "aioseed/Catch-v0", seed, 1e-3, [0.5]) for seed, name in enumerate(("older", "newer")))
    table = config_file.read(older / "config.toml")
    del table["learner"]["stop"]["after_training_seconds"]  # written before the field existed
    (older / "config.toml").write_text(tomli_w.dumps(table))
    assert list(group([read_run(older), read_run(newer)])) == ["all runs"]


def test_fields_of_an_algorithm_the_runs_do_not_train_name_no_setting(tmp_path) -> None:
    """Hopper's SAC seeds saved before and after R2D2 gained four fields were reported as two settings."""
    import tomli_w

    from aioseed.results.runs import group, read_run

    older, newer = (a_run(tmp_path, name, "aioseed/Catch-v0", seed, 1e-3, [0.5]) for seed, name in enumerate(("older", "newer")))
    table = config_file.read(older / "config.toml")
    assert table["learner"]["agent"] == "impala"
    del table["learner"]["r2d2"]["dueling_hidden"]  # written before the field existed
    table["learner"]["sac"]["tau"] = 0.5  # and a field of another algorithm that differs
    (older / "config.toml").write_text(tomli_w.dumps(table))
    assert list(group([read_run(older), read_run(newer)])) == ["all runs"]
    table["learner"]["impala"]["entropy_cost"] = 0.5  # the algorithm it trains: a setting
    (older / "config.toml").write_text(tomli_w.dumps(table))
    assert sorted(group([read_run(older), read_run(newer)])) == ["impala.entropy_cost=0.01", "impala.entropy_cost=0.5"]


def test_a_run_scored_by_its_evaluation_has_its_curve_read_only_where_the_report_draws_curves(tmp_path) -> None:
    from structlog.testing import capture_logs

    logdir = a_run(tmp_path / "runs", "evaluated", "aioseed/Catch-v0", 0, 1e-3, [0.5])
    (logdir / "curve.csv").write_text("frames,seconds,mean_return,eval_return\n40,1.0,half,\n")  # unreadable
    for out in (None, tmp_path / "report"):
        with capture_logs() as logs:
            result = report(ReportConfig(runs=(tmp_path / "runs",), out=out))
        assert [run["score"] for run in result["runs"]] == [0.5]
        assert [e["event"] for e in logs if e["event"] == "curve_unreadable"] == ([] if out is None else ["curve_unreadable"])
