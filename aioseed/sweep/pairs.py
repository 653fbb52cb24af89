"""Which (setting, seed) pairs of a study are done, failed or running, read from the trials' records: a
pair is run once, by one worker, however many trials the samplers hand out for it."""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    import optuna

FRESH = "fresh"
"""User attr of a random or TPE trial that chose its setting (at the first seed; the other seeds are queued)."""
GOING_ON = "going_on"
"""User attr of a trial that found its pair free and runs it (``prune_a_duplicate``): the trial's own number."""
WORD_S = 30.0
"""How long a trial waits for a later twin's word (a read of the records away); one silent that long counts as
going on (it died in between: its heartbeat fails it, and the pair is queued again)."""


def setting_slug(params: dict[str, Any]) -> str:
    """A directory name for a setting: ``learning_rate-0.001_entropy_cost-0.01``."""
    parts = [f"{key.rpartition('.')[2]}-{value}" for key, value in sorted(params.items())]
    return re.sub(r"[^A-Za-z0-9_.=-]", "_", "_".join(parts)) or "base"


def prune_a_duplicate(study: optuna.Study, trial: optuna.Trial, slug: str, seed: int) -> list[optuna.trial.FrozenTrial]:
    """Prunes ``trial``, marked a duplicate, where its pair is done or another trial runs it; else marks it
    ``GOING_ON`` and returns the finished trials (duplicates left out). ``trial`` has written its pair already.

    Of trials handed one pair at once, exactly one goes on, whichever reads the records first and on whichever
    machine: an earlier-numbered twin wins over a later one that reads its pair; a later twin that read the
    records before this trial wrote its pair saw no twin and went on, so this trial waits for each later twin's
    word (``GOING_ON``, or pruned). The running trials are read first, so a pair that finishes between the reads
    is seen as done."""
    import optuna
    from optuna.trial import TrialState

    def same(t: optuna.trial.FrozenTrial) -> bool:
        return t.number != trial.number and t.user_attrs.get("setting") == slug and t.user_attrs.get("seed") == seed

    running = [t for t in not_duplicates(study, (TrialState.RUNNING,)) if same(t)]
    done = not_duplicates(study, (TrialState.COMPLETE, TrialState.PRUNED))
    if any(same(t) for t in done):
        trial.set_user_attr("duplicate", True)  # a sampler came back to a finished pair: its logdir is not run again
        raise optuna.TrialPruned(f"{slug} at seed {seed} is already done")
    earlier = [t.number for t in running if t.number < trial.number]
    going_on = earlier or _going_on(study, [t for t in running if t.number > trial.number])
    if going_on:  # another worker (a thread here, or another sweep) trains it
        duplicate(study, trial, f"{slug} at seed {seed} is running in trial {going_on[0]}")
    trial.set_user_attr(GOING_ON, trial.number)  # its own number: a retry inherits its failed trial's user attrs
    return done


def _going_on(study: optuna.Study, later: list[optuna.trial.FrozenTrial]) -> list[int]:
    """The number of a ``later`` twin that goes on (or has not said within ``WORD_S``: counted as going on); none
    once each has yielded."""
    from optuna.trial import TrialState

    waiting, deadline = {t._trial_id: t.number for t in later}, time.monotonic() + WORD_S
    while waiting and time.monotonic() < deadline:
        for trial_id, number in list(waiting.items()):
            twin = study._storage.get_trial(trial_id)  # an unfinished trial is read from the storage, never a cache
            if twin.user_attrs.get("duplicate") or twin.state == TrialState.FAIL:
                del waiting[trial_id]
            elif twin.user_attrs.get(GOING_ON) == twin.number or twin.state.is_finished():
                return [number]
        if waiting:
            time.sleep(0.05)
    return sorted(waiting.values())


def duplicate(study: optuna.Study, trial: optuna.Trial, why: str) -> NoReturn:
    """Prunes ``trial``, marked a duplicate of a trial running its pair; a grid with no pair left unvisited stops
    handing this worker trials."""
    import optuna

    trial.set_user_attr("duplicate", True)
    sampler = study.sampler
    if isinstance(sampler, optuna.samplers.GridSampler) and not sampler._get_unvisited_grid_ids(study):
        study.stop()  # every pair is finished or running: this worker has none left to run
    raise optuna.TrialPruned(why)


def chosen_trials(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """The random or TPE trials that chose a setting, in order (duplicates left out)."""
    from optuna.trial import TrialState

    every = (TrialState.RUNNING, TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)
    return sorted((t for t in not_duplicates(study, every) if t.user_attrs.get(FRESH)), key=lambda t: t.number)


def chosen_settings(study: optuna.Study) -> list[str]:
    """The settings random or TPE trials chose, each once, in the order they were chosen."""
    return list(dict.fromkeys(t.user_attrs["setting"] for t in chosen_trials(study)))


def beyond_budget(study: optuna.Study, trial: optuna.Trial, slug: str, trials: int) -> None:
    """Prunes ``trial``, a fresh one of another setting than ``slug``'s, marked a duplicate, where earlier trials
    already chose the sweep's ``trials`` settings: the sweep then has only their seeds to run, and stops handing
    out trials (one more setting would be run at one seed while the others finish, or counted towards a sweep
    whose own settings failed)."""
    import optuna

    earlier = {t.user_attrs["setting"] for t in chosen_trials(study) if t.number < trial.number}
    if slug not in earlier and len(earlier) >= trials:
        trial.set_user_attr("duplicate", True)
        study.stop()
        raise optuna.TrialPruned(f"the sweep has its {trials} settings")


def unfinished(study: optuna.Study, grid: Mapping[str, Sequence[Any]], trials: int, seeds: Sequence[int]) -> int:
    """The (setting, seed) pairs the sweep still has to finish: a ``grid``'s every point at every seed, or else the
    first ``trials`` settings the sampler chose (and those it has yet to choose), each at every seed."""
    if grid:
        settings = [setting_slug(dict(zip(grid, values))) for values in itertools.product(*grid.values())]
    else:
        settings = chosen_settings(study)[:trials]
    wanted = {(setting, seed) for setting in settings for seed in seeds}
    return len(wanted - finished_pairs(study)) + (0 if grid else (trials - len(settings)) * len(seeds))


def finished_pairs(study: optuna.Study) -> set[tuple[str, int]]:
    """(setting, seed) of every trial complete or pruned, duplicates counted once."""
    from optuna.trial import TrialState

    done = not_duplicates(study, (TrialState.COMPLETE, TrialState.PRUNED))
    return {(t.user_attrs["setting"], t.user_attrs["seed"]) for t in done if "setting" in t.user_attrs}


def not_duplicates(study: optuna.Study, states: tuple[optuna.trial.TrialState, ...]) -> list[optuna.trial.FrozenTrial]:
    """The trials in ``states``, less those pruned as another's duplicate (they say nothing of their pair)."""
    return [t for t in study.get_trials(deepcopy=False, states=states) if not t.user_attrs.get("duplicate")]


def failed_pairs(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    """One failed trial per (setting, seed) that has no finished twin."""
    from optuna.trial import TrialState

    finished, found = finished_pairs(study), {}
    for t in study.get_trials(deepcopy=False, states=(TrialState.FAIL,)):
        pair = (t.user_attrs.get("setting"), t.user_attrs.get("seed"))
        if "setting" in t.user_attrs and pair not in finished:
            found[pair] = t
    return list(found.values())
