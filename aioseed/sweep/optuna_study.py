"""The Optuna study a sweep lives in: its storage (heartbeats that fail a dead sweep's trials and queue them
again), its sampler and pruner, the choices it keeps, and one take of a queued trial at a time."""

from __future__ import annotations

import contextlib
import fcntl
import pathlib
import threading
import warnings
from typing import TYPE_CHECKING, Any

from aioseed.errors import InvalidInput
from aioseed.sweep.config import Sweep

if TYPE_CHECKING:
    import optuna

RETRIES = 2
"""Times a trial whose sweep died is queued again."""


def study_of(sweep: Sweep) -> optuna.Study:
    import optuna
    from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

    sweep.directory.mkdir(parents=True, exist_ok=True)
    RetriesFirst = _grid_sampler()
    with warnings.catch_warnings():  # heartbeats are "experimental" in Optuna 4; the sweep relies on them knowingly
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        storage = RDBStorage(
            sweep.storage, heartbeat_interval=sweep.heartbeat_s, grace_period=2 * sweep.heartbeat_s,
            # Workers (threads, or sweeps on one machine) write to one SQLite file: wait for its lock, do not fail.
            engine_kwargs={"connect_args": {"timeout": 60}} if sweep.storage.startswith("sqlite") else None,
            heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=RETRIES, inherit_intermediate_values=True),
        )
    samplers = {
        "grid": lambda: RetriesFirst({**{k: list(v) for k, v in sweep.grid.items()}, "seed": list(sweep.seeds)}, seed=0),
        "random": lambda: optuna.samplers.RandomSampler(seed=0),
        "tpe": lambda: optuna.samplers.TPESampler(seed=0),
    }
    pruners = {
        "none": optuna.pruners.NopPruner,
        # From a trial's second report on (Optuna prunes at steps >= n_warmup_steps): its first says little.
        "median": lambda: optuna.pruners.MedianPruner(n_startup_trials=len(sweep.seeds), n_warmup_steps=2 * sweep.report_every_frames),
        "asha": lambda: optuna.pruners.SuccessiveHalvingPruner(min_resource=sweep.report_every_frames, reduction_factor=3),
    }
    return optuna.create_study(
        study_name=sweep.name, storage=storage, load_if_exists=True, direction="maximize",
        sampler=samplers[sweep.sampler](), pruner=pruners[sweep.pruner](),
    )


def _grid_sampler() -> type:
    import optuna
    from optuna.trial import TrialState

    class RetriesFirst(optuna.samplers.GridSampler):
        """Optuna's grid, whose stop waits for the trials queued again (failed in an earlier invocation). Those
        carry no grid point: its own stop ended the study after the first of them (every point was visited), or
        raised KeyError with one point left. ``run``'s callback stops the study once every pair is finished."""

        def after_trial(self, study: optuna.Study, trial: optuna.trial.FrozenTrial, state: TrialState, values: Any) -> None:
            if study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
                return
            if "grid_id" in study._storage.get_trial_system_attrs(trial._trial_id):
                super().after_trial(study, trial, state, values)
            elif not self._get_unvisited_grid_ids(study):
                study.stop()

    return RetriesFirst


def check_unchanged(sweep: Sweep, study: optuna.Study) -> None:
    """Optuna keeps a study's choices: a grid, seed list or choice edited since the study began is refused now,
    naming the change (Optuna's own error came from the first trial, as a traceback)."""
    from optuna.distributions import CategoricalDistribution

    wanted = {k: list(v) for k, v in sweep.grid.items()} | {k: list(d.choices) for k, d in sweep.space.items() if d.choices}
    if sweep.sampler == "grid":
        wanted["seed"] = list(sweep.seeds)
    for trial in study.get_trials(deepcopy=False):
        for name, distribution in trial.distributions.items():
            if isinstance(distribution, CategoricalDistribution) and name in wanted and list(distribution.choices) != wanted[name]:
                raise InvalidInput(
                    f"{sweep.source}: {name} was {list(distribution.choices)}, now {wanted[name]}; a study keeps its "
                    "choices: give the sweep another sweep.name to start a new study"
                )


def one_pop_at_a_time(study: optuna.Study, storage: str) -> optuna.Study:
    """``study``, whose workers take its queued trials one at a time. Optuna takes one by reading that it waits,
    then writing that it runs; on SQLite nothing holds the row between the two, and two workers both took one
    trial: the second found its logdir claimed and pruned the trial as a duplicate while the first trained it,
    and the first's next report to the pruned trial ended the sweep. A lock serialises the take between this
    sweep's worker threads; on a SQLite ``storage``, an exclusive ``flock`` on a file beside the database also
    serialises it between sweeps in other processes on the machine. (A database server's storage locks the row.)"""
    pop, lock, beside = study._pop_waiting_trial_id, threading.Lock(), sqlite_lock_file(storage)

    def serialized() -> int | None:
        with lock, contextlib.ExitStack() as held:
            if beside is not None:
                file = held.enter_context(open(beside, "ab"))
                fcntl.flock(file, fcntl.LOCK_EX)  # the kernel lets go when the file closes or the process dies
            return pop()

    study._pop_waiting_trial_id = serialized  # type: ignore[method-assign]
    return study


def sqlite_lock_file(storage: str) -> pathlib.Path | None:
    """The file beside a SQLite ``storage``'s database that sweeps lock to take a trial; None for other storages
    (and an in-memory database, which no other process shares)."""
    from sqlalchemy.engine import make_url

    url = make_url(storage)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return pathlib.Path(url.database).with_name(pathlib.Path(url.database).name + ".take-lock")
