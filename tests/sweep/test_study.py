"""The study's bookkeeping: seeds queued behind a fresh setting, and a setting pruned at one seed not
run at the others."""

from __future__ import annotations

import optuna
import pytest

from aioseed.sweep.config import read_sweep
from aioseed.sweep.pairs import finished_pairs
from aioseed.sweep.study import objective, setting_slug


def a_sweep(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(
        f"[sweep]\ndirectory = '{tmp_path / 'trials'}'\nsampler = 'random'\ntrials = 1\nseeds = [4, 5, 6]\n"
        "[space]\n'learner.impala.learning_rate' = {choices = [0.001]}\n[run.learner.stop]\nafter_frames = 100\n"
    )
    return read_sweep(path)


def ended(state: optuna.trial.TrialState, seed: int, value: float | None = None) -> optuna.trial.FrozenTrial:
    """A finished trial of the setting learning_rate 0.001 at ``seed``."""
    params = {"learner.impala.learning_rate": 0.001}
    return optuna.trial.create_trial(
        state=state, value=value, params=params,
        distributions={"learner.impala.learning_rate": optuna.distributions.CategoricalDistribution([0.001])},
        user_attrs={"setting": setting_slug(params), "seed": seed},
    )


def test_a_setting_pruned_at_one_seed_is_not_run_at_the_others(tmp_path) -> None:
    sweep = a_sweep(tmp_path)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    params = {"learner.impala.learning_rate": 0.001}
    study.add_trial(ended(optuna.trial.TrialState.PRUNED, seed=5))
    trial = study.ask()
    with pytest.raises(optuna.TrialPruned, match="learning_rate-0.001 was pruned at seed 5"):
        objective(sweep, study, trial)
    assert not (tmp_path / "trials").exists()  # nothing ran
    queued = study.get_trials(states=(optuna.trial.TrialState.WAITING,))
    assert sorted(t.user_attrs["seed"] for t in queued) == [5, 6]  # the other seeds were queued first
    assert all(t.system_attrs["fixed_params"] == params for t in queued)  # at the same setting


def test_a_sampler_that_comes_back_to_a_finished_setting_and_seed_does_not_run_it_again(tmp_path) -> None:
    sweep = a_sweep(tmp_path)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    study.add_trial(ended(optuna.trial.TrialState.COMPLETE, seed=4, value=0.9))
    trial = study.ask()
    with pytest.raises(optuna.TrialPruned, match="learning_rate-0.001 at seed 4 is already done"):
        objective(sweep, study, trial)
    assert not (tmp_path / "trials").exists()
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    assert finished_pairs(study) == {("learning_rate-0.001", 4)}  # the repeat is not counted twice


def test_trials_that_failed_are_all_run_again_by_the_next_invocation(tmp_path, monkeypatch) -> None:
    """A grid of three settings whose trials all fail: the next ``aioseed sweep`` runs all three again (the
    grid's own stop ended it after the first retry, or raised KeyError with one point unvisited)."""
    from aioseed.sweep import study as studies
    from aioseed.sweep.trial import TrialFailed

    path = tmp_path / "sweep.toml"
    path.write_text(
        f"[sweep]\ndirectory = '{tmp_path / 'trials'}'\nseeds = [4]\n"
        "[grid]\n'learner.impala.learning_rate' = [0.001, 0.002, 0.003]\n[run.learner.stop]\nafter_frames = 100\n"
    )
    sweep, ran = read_sweep(path), []

    def failing(command, logdir, every, report, window, stopping=None, stop=None) -> float:
        ran.append(logdir.parent.name)
        raise TrialFailed("the run exited 1")

    monkeypatch.setattr(studies, "run_trial", failing)
    assert studies.failed_pairs(studies.run(sweep)) and len(ran) == 3

    def succeeding(command, logdir, every, report, window, stopping=None, stop=None) -> float:
        ran.append(logdir.parent.name)
        return 0.5

    monkeypatch.setattr(studies, "run_trial", succeeding)
    study = studies.run(sweep)
    assert len(finished_pairs(study)) == 3 and not studies.failed_pairs(study)
    assert sorted(ran[3:]) == ["learning_rate-0.001", "learning_rate-0.002", "learning_rate-0.003"]



def test_a_grid_edited_between_invocations_is_refused_naming_the_change(tmp_path, monkeypatch) -> None:
    """Optuna cannot change a study's choices; the sweep says so, before any trial, instead of a traceback."""
    from aioseed.errors import InvalidInput
    from aioseed.sweep import study as studies

    path = tmp_path / "sweep.toml"

    def grid(*rates: float):
        values = ", ".join(map(str, rates))
        path.write_text(
            f"[sweep]\ndirectory = '{tmp_path / 'trials'}'\nseeds = [4]\n"
            f"[grid]\n'learner.impala.learning_rate' = [{values}]\n[run.learner.stop]\nafter_frames = 100\n"
        )
        return read_sweep(path)

    monkeypatch.setattr(studies, "run_trial", lambda command, logdir, *args: 0.5)
    studies.run(grid(0.001, 0.002))
    with pytest.raises(InvalidInput, match=r"learner.impala.learning_rate was \[0.001, 0.002\], now \[0.001, 0.003\]"):
        studies.run(grid(0.001, 0.003))


def test_a_kept_result_counts_only_for_the_trial_it_ran_and_an_unreadable_one_runs_again(tmp_path) -> None:
    import dataclasses

    from aioseed.results.curves import Point, write_csv
    from aioseed.server.config import StopConfig
    from aioseed.sweep.study import kept_result, trial_table
    from aioseed.sweep.trial import write_config

    sweep = a_sweep(tmp_path)
    params = {"learner.impala.learning_rate": 0.001}
    kept = tmp_path / "kept" / "seed-4"
    table = trial_table(sweep, params, 4, tmp_path / "trials" / "a" / "seed-4")
    write_config(kept, trial_table(sweep, params, 4, tmp_path / "elsewhere"))  # run from another machine's logdir
    write_csv([Point(50, 1.0, 0.2), Point(100, 2.0, 0.5)], kept / "curve.csv")
    (kept / "config.toml").write_text('command = "run"\npreset = "none"\n')  # the run's resolved config
    assert [p.mean_return for p in kept_result(kept, table, "none")] == [0.2, 0.5]
    assert kept_result(kept, table, "none", StopConfig(after_frames=100)) is not None
    assert kept_result(kept, table, "none", StopConfig(after_frames=150)) is None  # stopped from outside at 100
    assert kept_result(kept, table, "mujoco-sac") is None  # the sweep's preset changed
    longer = dataclasses.replace(sweep, run={"learner": {"stop": {"after_frames": 200}}})  # a changed budget
    assert kept_result(kept, trial_table(longer, params, 4, tmp_path / "trials" / "a" / "seed-4"), "none") is None
    (kept / "curve.csv").write_text("<<<<<<< HEAD\n")
    assert kept_result(kept, table, "none") is None
    assert kept_result(tmp_path / "nothing", table, "none") is None


def a_grid(tmp_path, seeds: int = 4):
    path = tmp_path / "sweep.toml"
    path.write_text(
        f"[sweep]\ndirectory = '{tmp_path / 'trials'}'\nseeds = {list(range(seeds))}\n"
        "[grid]\n'learner.impala.learning_rate' = [0.001]\n[run.learner.stop]\nafter_frames = 100\n"
    )
    return read_sweep(path)


def test_two_workers_run_two_trials_at_once_and_each_pair_once(tmp_path, monkeypatch) -> None:
    """The last pair is still running when the other worker finishes: the grid hands that worker the running
    pair, which it must not run a second time in the same logdir (it is pruned as a duplicate, and the worker stops)."""
    import threading
    import time

    from aioseed.sweep import study as studies

    sweep, lock, ran, running, most = a_grid(tmp_path), threading.Lock(), [], set(), [0]

    def training(command, logdir, every, report, window, stopping=None, stop=None) -> float:
        with lock:
            assert logdir not in running, f"{logdir} run twice at once"
            running.add(logdir)
            most[0] = max(most[0], len(running))
        time.sleep(0.3 if logdir.name != "seed-3" else 1.5)
        with lock:
            running.discard(logdir)
            ran.append(logdir.name)
        return 0.5

    monkeypatch.setattr(studies, "run_trial", training)
    study = studies.run(sweep, workers=2)
    assert most[0] == 2 and sorted(ran) == [f"seed-{seed}" for seed in range(4)]
    assert len(finished_pairs(study)) == 4 and not studies.failed_pairs(study)


def test_a_running_pair_handed_out_again_is_pruned_as_a_duplicate_and_not_counted_done(tmp_path) -> None:
    sweep = a_sweep(tmp_path)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    first = study.ask()
    first.set_user_attr("setting", "learning_rate-0.001")
    first.set_user_attr("seed", 4)
    trial = study.ask()
    with pytest.raises(optuna.TrialPruned, match="learning_rate-0.001 at seed 4 is running in trial 0"):
        objective(sweep, study, trial)
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    assert trial.user_attrs["duplicate"] and finished_pairs(study) == set()  # the pair is not done while trial 0 runs
    assert not (tmp_path / "trials").exists()


def test_a_stopped_sweep_stops_every_running_trial_and_the_next_runs_them_again(tmp_path, monkeypatch) -> None:
    import threading

    from aioseed.sweep import study as studies
    from aioseed.sweep.trial import Stopped

    sweep, stopping, started = a_grid(tmp_path), threading.Event(), threading.Semaphore(0)

    def until_stopped(command, logdir, every, report, window, stopping=None, stop=None) -> float:
        started.release()
        assert stopping is not None and stopping.wait(30)
        raise Stopped("stopped")

    def stop_once_both_run() -> None:
        for _ in range(2):
            assert started.acquire(timeout=30)
        stopping.set()

    monkeypatch.setattr(studies, "run_trial", until_stopped)
    stopper = threading.Thread(target=stop_once_both_run)
    stopper.start()
    with pytest.raises(Stopped):
        studies.run(sweep, workers=2, stopping=stopping)
    stopper.join()
    study = studies.study_of(sweep)
    stopped = study.get_trials(states=(optuna.trial.TrialState.FAIL,))
    assert len(stopped) == 2 and len(studies.failed_pairs(study)) == 2  # named: the next invocation queues them
    assert not study.get_trials(states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.RUNNING))

    ran = []
    monkeypatch.setattr(studies, "run_trial", lambda command, logdir, *args, **kwargs: ran.append(logdir.name) or 0.5)
    study = studies.run(sweep)
    assert sorted(ran) == [f"seed-{seed}" for seed in range(4)] and len(finished_pairs(study)) == 4


def test_a_logdir_claimed_by_another_worker_is_not_run_and_the_trial_is_a_duplicate(tmp_path, monkeypatch) -> None:
    """The records can miss a twin (the later trial wrote its pair before the earlier one did, and the earlier one
    ignores later trials): the claim on the logdir is what keeps one pair from training twice at once."""
    from aioseed.sweep import study as studies
    from aioseed.sweep.trial import claim

    sweep = a_sweep(tmp_path)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    trial = study.ask()
    trial.set_user_attr("setting", "learning_rate-0.001")
    trial.set_user_attr("seed", 4)
    ran = []
    monkeypatch.setattr(studies, "run_trial", lambda command, logdir, *args: ran.append(logdir.name) or 0.5)
    logdir = tmp_path / "trials" / "learning_rate-0.001" / "seed-4"
    with claim(logdir) as mine:
        assert mine
        with claim(logdir) as also_mine:
            assert not also_mine  # another open of the file: another thread's, or another process's
        with pytest.raises(optuna.TrialPruned, match="claimed by another worker"):
            studies.objective(sweep, study, trial)
    assert ran == [] and trial.user_attrs["duplicate"]
    with claim(logdir) as mine:
        assert mine  # let go when the block ended
    retry = study.ask()
    for key, value in (("setting", "learning_rate-0.001"), ("seed", 4)):
        retry.set_user_attr(key, value)
    assert studies.objective(sweep, study, retry) == 0.5 and ran == ["seed-4"]


def test_an_error_raised_after_the_study_stopped_handing_out_trials_still_ends_the_sweep(tmp_path, monkeypatch) -> None:
    """Once a worker finds every pair finished or running it stops the study, and Optuna no longer reads the
    results of the trials still running: a trial stopped by a signal then must still stop the sweep (exit 130),
    not end it as if done."""
    import threading
    import time

    from aioseed.sweep import study as studies
    from aioseed.sweep.trial import Stopped

    sweep, stopping = a_grid(tmp_path, seeds=2), threading.Event()

    def training(command, logdir, every, report, window, stopping=None, stop=None) -> float:
        if logdir.name == "seed-0":
            return 0.5
        study = studies.study_of(sweep)
        while not any(t.user_attrs.get("duplicate") for t in study.get_trials(states=(optuna.trial.TrialState.PRUNED,))):
            time.sleep(0.05)  # the other worker, handed this running pair, stops the study
        time.sleep(0.5)  # and its loop ends
        raise Stopped("stopped")

    monkeypatch.setattr(studies, "run_trial", training)
    with pytest.raises(Stopped):
        studies.run(sweep, workers=2, stopping=stopping)
    assert stopping.is_set()


@pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")  # the other sweep's trial, asked by hand
def test_a_sweep_that_leaves_a_pair_running_in_another_sweep_says_so_and_exits_1(tmp_path, monkeypatch) -> None:
    """A pair whose trial is recorded running (another sweep's, or a killed one's whose heartbeat is not yet stale)
    is not run here: the sweep does the rest and exits 1, naming what is left, not 0 as if all were done."""
    from structlog.testing import capture_logs

    from aioseed.sweep import study as studies
    from aioseed.sweep.config import SweepConfig

    sweep = a_grid(tmp_path, seeds=2)
    elsewhere = studies.study_of(sweep).ask()
    elsewhere.suggest_categorical("learner.impala.learning_rate", [0.001])
    seed = elsewhere.suggest_categorical("seed", [0, 1])
    elsewhere.set_user_attr("setting", "learning_rate-0.001")
    elsewhere.set_user_attr("seed", seed)
    ran = []
    monkeypatch.setattr(studies, "run_trial", lambda command, logdir, *args, **kwargs: ran.append(logdir.name) or 0.5)
    with capture_logs() as logs:
        assert studies.main(SweepConfig(config=tmp_path / "sweep.toml", report=False)) == 1
    assert ran == [f"seed-{1 - seed}"]
    [unfinished] = [entry for entry in logs if entry["event"] == "sweep_unfinished"]
    assert unfinished["running_elsewhere"] == 1


def test_a_failed_or_stopped_trial_is_one_line_from_optuna_not_a_traceback(tmp_path, monkeypatch) -> None:
    import logging

    from aioseed.sweep import study as studies
    from aioseed.sweep.trial import TrialFailed

    records: list[logging.LogRecord] = []

    class Kept(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    def failing(command, logdir, every, report, window, stopping=None, stop=None) -> float:
        raise TrialFailed(f"aioseed run exited with status 1: see {logdir / 'trial.log'}")

    monkeypatch.setattr(studies, "run_trial", failing)
    handler = Kept()
    logging.getLogger("optuna").addHandler(handler)
    try:
        studies.run(a_grid(tmp_path, seeds=1))
    finally:
        logging.getLogger("optuna").removeHandler(handler)
    [failed] = [r for r in records if "because of the following error" in r.getMessage()]
    assert "trial.log" in failed.getMessage() and failed.exc_info is None


def test_a_random_sweep_runs_its_trials_settings_only_and_a_failed_one_is_run_again_not_replaced(tmp_path, monkeypatch) -> None:
    """trials = 2, and the first setting's run at its first seed fails each time. The sweep does not choose a
    third setting in its place (it ran one and exited 0, the failed pair left behind for good); it exits 1, and
    the next invocation runs the failed pair and nothing else."""
    from aioseed.sweep import study as studies
    from aioseed.sweep.config import SweepConfig
    from aioseed.sweep.pairs import chosen_settings
    from aioseed.sweep.trial import TrialFailed

    path = tmp_path / "sweep.toml"
    path.write_text(
        f"[sweep]\ndirectory = '{tmp_path / 'trials'}'\nsampler = 'random'\ntrials = 2\nseeds = [4, 5]\n"
        "[space]\n'learner.impala.learning_rate' = {choices = [0.001, 0.002, 0.003, 0.004, 0.005, 0.006]}\n"
        "[run.learner.stop]\nafter_frames = 100\n"
    )
    ran: list[tuple[str, str]] = []
    failing = []

    def fails_at_first(command, logdir, every, report, window, stopping=None, stop=None) -> float:
        ran.append((logdir.parent.name, logdir.name))
        if ran[-1] == ran[0] and failing:
            raise TrialFailed("the run exited 1")
        return 0.5

    monkeypatch.setattr(studies, "run_trial", fails_at_first)
    failing.append(True)
    assert studies.main(SweepConfig(config=path, report=False)) == 1
    study = studies.study_of(read_sweep(path))
    settings = chosen_settings(study)
    assert len(settings) == 2 and {setting for setting, _ in ran} == set(settings)
    assert len(finished_pairs(study)) == 3  # two settings x two seeds, less the failing pair

    failing.clear()
    first_run = len(ran)
    assert studies.main(SweepConfig(config=path, report=False)) == 0
    assert ran[first_run:] == [ran[0]] and chosen_settings(study) == settings  # the failed pair, and no other setting
    assert len(finished_pairs(study)) == 4


def test_a_setting_whose_config_does_not_parse_fails_its_own_trials_only(tmp_path, monkeypatch) -> None:
    """The sweep parses its first setting up front; a later one that the run refuses fails its trial, and the
    other settings still run (a ValueError from a config's checks used to end every worker)."""
    import optuna

    from aioseed.sweep import study as studies

    path = tmp_path / "sweep.toml"
    path.write_text(f"[sweep]\ndirectory = '{tmp_path / 'trials'}'\nseeds = [0]\n[grid]\n'learner.return_window' = [10, 0]\n"
        "[run.learner.stop]\nafter_frames = 100\n")
    ran: list[str] = []
    monkeypatch.setattr(studies, "run_trial", lambda command, logdir, *args, **kwargs: ran.append(logdir.parent.name) or 0.5)
    study = studies.run(read_sweep(path))
    assert len(ran) == 1 and "10" in ran[0]
    failed = [t for t in study.trials if t.state == optuna.trial.TrialState.FAIL]
    assert len(failed) == 1 and failed[0].params["learner.return_window"] == 0
