"""aioseed sweep through Optuna and real run processes: the documented Catch sweep (3 seeds x 2 learning
rates, one of them 0) ends in a report whose intervals tell the settings apart; a killed sweep's trial
is failed by its missing heartbeat, queued again, and its run resumes from its checkpoint."""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import shutil
import signal

import optuna
import pytest
from tests.processes import Process
from tests.waiting import until

CATCH = pathlib.Path(__file__).parents[2] / "docs" / "sweeps" / "catch-lr.toml"


def command_lines() -> list[str]:
    lines = []
    for entry in pathlib.Path("/proc").iterdir():
        try:
            lines.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, NotADirectoryError):
            continue
    return lines


def moved(tmp_path: pathlib.Path, text: str) -> pathlib.Path:
    """The sweep file with its directory under ``tmp_path``."""
    path = tmp_path / "sweep.toml"
    path.write_text(re.sub(r'^directory = ".*"$', f'directory = "{tmp_path / "trials"}"', text, flags=re.M))
    return path


@pytest.mark.timeout(900)  # six Catch runs, two at a time: ~3.5 min here
async def test_the_catch_sweep_reports_intervals_that_separate_learning_from_a_learning_rate_of_0(tmp_path) -> None:
    """Two workers: two runs train at once, and each (setting, seed) runs once (the grid hands a finished worker
    the pair still running at the end, which it must not run again in the same logdir)."""
    sweep = await Process(["sweep", "--config", str(moved(tmp_path, CATCH.read_text())), "--workers", "2"]).start()
    try:
        assert await sweep.wait(timeout_s=900) == 0, sweep.log
    finally:
        sweep.kill()
    printed = await sweep.stdout()
    report = json.loads((tmp_path / "trials" / "report" / "report.json").read_text())
    learning, broken = report["settings"]["impala.learning_rate=0.001"], report["settings"]["impala.learning_rate=0.0"]
    assert learning["runs_per_task"] == broken["runs_per_task"] == 3, printed
    assert broken["IQM"]["high"] < learning["IQM"]["low"], printed  # the intervals do not overlap
    assert learning["IQM"]["point"] >= 0.5 and broken["IQM"]["point"] < 0.0, printed
    assert re.search(r"^impala.learning_rate=0.001 +3  [\d.]+ \[[\d.]+, [\d.]+\]", printed, re.M), printed
    study = optuna.load_study(study_name="catch-lr", storage=f"sqlite:///{tmp_path / 'trials' / 'study.db'}")
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert sorted((t.params["learner.impala.learning_rate"], t.params["seed"]) for t in trials) == [
        (lr, seed) for lr in (0.0, 0.001) for seed in (0, 1, 2)
    ]
    spans = sorted((t.datetime_start, t.datetime_complete) for t in trials)
    assert any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:])), spans  # two trained at once
    assert sweep.errors() == [], sweep.log


async def test_a_signalled_sweep_stops_each_running_trial_in_order_and_exits_130(tmp_path) -> None:
    """SIGINT with two workers: both runs checkpoint and exit (SIGTERM to each), both trials fail, named for the
    next invocation to queue again, and no run is left training."""
    path = moved(tmp_path, RESUMABLE.replace("seeds = [7]", "seeds = [7, 8]").replace("after_frames = 12000", "after_frames = 10000000"))
    logdirs = [tmp_path / "trials" / "learning_rate-0.001" / f"seed-{seed}" for seed in (7, 8)]
    sweep = await Process(["sweep", "--config", str(path), "--workers", "2"]).start()
    try:
        await until(lambda: all(any((d / "checkpoints").glob("ckpt-*.index")) for d in logdirs), "both runs' first checkpoints", attempts=12000)
        sweep.signal(signal.SIGINT)
        assert await sweep.wait(timeout_s=180) == 130, sweep.log
    finally:
        sweep.kill()
    for logdir in logdirs:
        log = (logdir / "trial.log").read_text()
        assert "learner_stopping" in log and "learner_stopped" in log, log[-2000:]
    assert not any(str(d / "trial.toml") in cmdline for d in logdirs for cmdline in command_lines())
    assert "sweep_stopped" in sweep.log
    study = optuna.load_study(study_name="resume", storage=f"sqlite:///{tmp_path / 'trials' / 'study.db'}")
    failed = study.get_trials(states=(optuna.trial.TrialState.FAIL,))
    assert sorted(t.user_attrs["seed"] for t in failed) == [7, 8] and len(study.get_trials()) == 2


RESUMABLE = """
[sweep]
name = "resume"
directory = "x"
seeds = [7]
pruner = "none"
heartbeat_s = 1

[grid]
"learner.impala.learning_rate" = [0.001]

[run]
preset = "catch"
num_actors = 1
envs_per_actor = 8

[run.learner]
checkpoint_every_s = 1.0

[run.learner.stop]
at_return = "None"
after_frames = 12000
"""


async def test_a_killed_sweep_queues_its_trial_again_and_the_run_resumes_from_its_checkpoint(tmp_path) -> None:
    path = moved(tmp_path, RESUMABLE)
    logdir = tmp_path / "trials" / "learning_rate-0.001" / "seed-7"
    first = await Process(["sweep", "--config", str(path)]).start()
    try:
        # A checkpoint that has trained (ckpt-N counts train steps): the first, ckpt-0, is written at frames 0.
        for _ in range(600):
            if any(int(p.name[5:-6]) > 0 for p in (logdir / "checkpoints").glob("ckpt-*.index")):
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError(f"no checkpoint after a train step in {logdir}:\n{first.log}")
    finally:
        first.kill()  # SIGKILL: no cleanup in the sweep; its run gets SIGTERM from the kernel
    await first.wait()
    config = str(logdir / "trial.toml")
    await until(lambda: not any(config in cmdline for cmdline in command_lines()), "the orphaned run to stop", attempts=6000)
    latest = checkpoint_frames(logdir / "checkpoints")  # the orphan's final checkpoint, or the one waited for
    assert latest > 0
    await asyncio.sleep(2.5)  # past the heartbeat's grace period (2 x heartbeat_s) since the sweep died
    second = await Process(["sweep", "--config", str(path)]).start()
    try:
        assert await second.wait(timeout_s=600) == 0, second.log
    finally:
        second.kill()
    trial_log = (logdir / "trial.log").read_text()
    restored = re.search(r"checkpoint_restored .*frames=(\d+)", trial_log)
    assert restored and int(restored.group(1)) == latest, trial_log[-3000:]
    study = optuna.load_study(study_name="resume", storage=f"sqlite:///{tmp_path / 'trials' / 'study.db'}")
    states = sorted(t.state.name for t in study.get_trials())
    assert states == ["COMPLETE", "FAIL"], states


def checkpoint_frames(directory: pathlib.Path) -> int:
    """The env frames of ``directory``'s latest checkpoint, as it saved them."""
    import tensorflow as tf

    return int(tf.train.load_checkpoint(tf.train.latest_checkpoint(str(directory))).get_tensor("frames/.ATTRIBUTES/VARIABLE_VALUE"))


def test_a_pruned_trial_stops_its_run_in_order_at_the_frames_it_was_judged(tmp_path) -> None:
    """run_trial reads the run's curve back while it trains; once the pruner says stop, the run gets
    SIGTERM and checkpoints before it exits."""
    import pytest

    from aioseed.sweep.trial import Pruned, command, run_trial, write_config

    logdir = tmp_path / "trial"
    table = {"num_actors": 1, "envs_per_actor": 8, "learner": {"logdir": str(logdir), "console": {"enabled": False},
             "stop": {"at_return": "None", "after_frames": 10_000_000}}}
    judged: list[tuple[float, int]] = []

    def should_stop(value: float, frames: int) -> bool:
        judged.append((value, frames))
        return frames >= 4000

    with pytest.raises(Pruned) as pruned:
        run_trial(command("catch", write_config(logdir, table)), logdir, 2000, should_stop)
    assert pruned.value.frames == 4000 and [f for _, f in judged] == [2000, 4000]
    assert all(-1.0 <= v <= 1.0 for v, _ in judged)
    log = (logdir / "trial.log").read_text()
    assert "learner_stopping" in log and "checkpoint_saved" in log and "learner_stopped" in log, log[-2000:]


KEPT = """
[sweep]
name = "{name}"
directory = "{directory}"
keep = "{keep}"
seeds = {seeds}
pruner = "none"

[grid]
"learner.impala.learning_rate" = [0.001]

[run]
preset = "catch"
num_actors = 1
envs_per_actor = 8

[run.learner.stop]
at_return = "None"
after_frames = 6000
"""


async def test_a_sweep_carries_on_from_kept_results_alone_and_reports_them(tmp_path) -> None:
    """Seeds 0 and 1 run on "one machine" and are kept; a fresh study elsewhere with no trial logdir and only the
    kept results runs seed 2 alone, and its report counts all three."""
    keep = tmp_path / "kept"
    first = tmp_path / "first.toml"
    first.write_text(KEPT.format(name="here", directory=tmp_path / "here", keep=keep, seeds="[0, 1]"))
    sweep = await Process(["sweep", "--config", str(first), "--no-report"]).start()
    assert await sweep.wait(timeout_s=600) == 0, sweep.log
    for seed in (0, 1):
        kept = keep / "learning_rate-0.001" / f"seed-{seed}"
        assert sorted(p.name for p in kept.iterdir()) == ["config.toml", "curve.csv", "evaluations", "trial.toml"]
    shutil.rmtree(tmp_path / "here")  # no run directory, no study: only the kept results go on

    second = tmp_path / "second.toml"
    second.write_text(KEPT.format(name="there", directory=tmp_path / "there", keep=keep, seeds="[0, 1, 2]"))
    sweep = await Process(["sweep", "--config", str(second)]).start()
    assert await sweep.wait(timeout_s=600) == 0, sweep.log
    ran = sorted(p.parent.name for p in (tmp_path / "there").rglob("trial.log"))
    assert ran == ["seed-2"], ran
    report = json.loads((tmp_path / "there" / "report" / "report.json").read_text())
    (setting,) = report["settings"].values()
    assert setting["runs_per_task"] == 3, report
    assert (keep / "learning_rate-0.001" / "seed-2" / "curve.csv").is_file()
