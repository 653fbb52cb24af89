"""Which (setting, seed) pairs of a study are done, failed or running, read from the trials' records: a
pair is run once, by one worker, however many trials the samplers hand out for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    import optuna


def prune_a_duplicate(study: optuna.Study, trial: optuna.Trial, slug: str, seed: int) -> list[optuna.trial.FrozenTrial]:
    """Prunes ``trial``, marked a duplicate, where its pair is done or an earlier trial trains it now (in its logdir);
    else returns the finished trials (duplicates left out). Two trials handed the same pair at once: the later
    one is pruned, never both (where the later one wrote its pair before the earlier did, the earlier finds the
    logdir claimed). The running trials are read first, so a pair that finishes between the reads is seen as done."""
    import optuna
    from optuna.trial import TrialState

    def same(t: optuna.trial.FrozenTrial) -> bool:
        return t.number != trial.number and t.user_attrs.get("setting") == slug and t.user_attrs.get("seed") == seed

    running = [t for t in not_duplicates(study, (TrialState.RUNNING,)) if same(t) and t.number < trial.number]
    done = not_duplicates(study, (TrialState.COMPLETE, TrialState.PRUNED))
    if any(same(t) for t in done):
        trial.set_user_attr("duplicate", True)  # a sampler came back to a finished pair: its logdir is not run again
        raise optuna.TrialPruned(f"{slug} at seed {seed} is already done")
    if running:  # another worker (a thread here, or another sweep) trains it
        duplicate(study, trial, f"{slug} at seed {seed} is running in trial {running[0].number}")
    return done


def duplicate(study: optuna.Study, trial: optuna.Trial, why: str) -> NoReturn:
    """Prunes ``trial``, marked a duplicate of a trial running its pair; a grid with no pair left unvisited stops
    handing this worker trials."""
    import optuna

    trial.set_user_attr("duplicate", True)
    sampler = study.sampler
    if isinstance(sampler, optuna.samplers.GridSampler) and not sampler._get_unvisited_grid_ids(study):
        study.stop()  # every pair is finished or running: this worker has none left to run
    raise optuna.TrialPruned(why)


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
