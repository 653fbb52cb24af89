"""Of trials handed one (setting, seed) pair at once, exactly one runs it, whichever reads the records first:
nothing locks the records across machines, so a trial that finds a later twin waits for its word."""

from __future__ import annotations

import concurrent.futures
import threading

import optuna
import pytest
from tests.sweep.test_study import a_sweep

from aioseed.sweep import pairs
from aioseed.sweep import study as studies
from aioseed.sweep.pairs import GOING_ON, prune_a_duplicate

SLUG, SEED = "learning_rate-0.001", 4


def twins(study: optuna.Study) -> tuple[optuna.Trial, optuna.Trial]:
    """Two trials, 0 and 1, handed the pair SLUG at SEED."""
    earlier, later = study.ask(), study.ask()
    for trial in (earlier, later):
        trial.set_user_attr("setting", SLUG)
        trial.set_user_attr("seed", SEED)
    return earlier, later


def test_a_later_twin_that_read_the_records_first_goes_on_and_the_earlier_one_yields(tmp_path) -> None:
    """The later trial wrote and read its pair before the earlier one wrote its own (on another machine, within
    milliseconds), so it saw no twin and went on. The earlier one went on as well: both trained the pair."""
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'study.db'}", study_name="pairs", direction="maximize")
    earlier, later = study.ask(), study.ask()
    later.set_user_attr("setting", SLUG)
    later.set_user_attr("seed", SEED)
    assert prune_a_duplicate(study, later, SLUG, SEED) == [] and later.user_attrs[GOING_ON] == 1
    earlier.set_user_attr("setting", SLUG)
    earlier.set_user_attr("seed", SEED)
    with pytest.raises(optuna.TrialPruned, match=f"{SLUG} at seed {SEED} is running in trial 1"):
        prune_a_duplicate(study, earlier, SLUG, SEED)
    assert study.trials[0].user_attrs["duplicate"] and GOING_ON not in study.trials[0].user_attrs


def test_an_earlier_twin_waits_for_the_later_ones_word_and_runs_the_pair_once_it_yields(tmp_path, monkeypatch) -> None:
    """Both wrote their pair before either read: the earlier one waits until the later one, seeing it, is pruned,
    then runs the pair (in a resumed study the grid picks unvisited pairs at random, so two workers can draw one).
    The later one is a retry, whose user attrs Optuna copied from its failed trial, word included: no word of its."""
    sweep = a_sweep(tmp_path)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(seed=0))
    earlier, later = twins(study)
    later.set_user_attr(GOING_ON, 7)  # inherited from trial 7, which failed
    ran, waits, read = [], threading.Event(), study._storage.get_trial
    monkeypatch.setattr(studies, "run_trial", lambda command, logdir, *args: ran.append(logdir.name) or 0.5)
    monkeypatch.setattr(study._storage, "get_trial", lambda trial_id: waits.set() or read(trial_id))  # it reads trial 1's word
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        first = pool.submit(studies.objective, sweep, study, earlier)
        assert waits.wait(30) and not first.done() and ran == []  # it waits for trial 1's word
        with pytest.raises(optuna.TrialPruned, match="is running in trial 0"):
            studies.objective(sweep, study, later)
        assert first.result(timeout=30) == 0.5 and ran == [f"seed-{SEED}"]
    assert later.user_attrs["duplicate"] and earlier.user_attrs[GOING_ON] == 0


def test_a_later_twin_silent_past_the_wait_counts_as_running_the_pair(tmp_path, monkeypatch) -> None:
    """A twin that died between writing its pair and its word: the earlier one yields rather than risk two runs
    (the dead one's heartbeat fails it, and the pair is queued again)."""
    study = optuna.create_study(direction="maximize")
    earlier, _ = twins(study)
    monkeypatch.setattr(pairs, "WORD_S", 0.2)
    with pytest.raises(optuna.TrialPruned, match="is running in trial 1"):
        prune_a_duplicate(study, earlier, SLUG, SEED)
