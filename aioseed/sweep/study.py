"""``aioseed sweep``: the search lives in an Optuna study, so a sweep resumes after a crash and any
machine that reaches its storage can join it.

Optuna over Ray Tune: its study storage (SQLite on one machine, a database server's URL across many)
already holds trials, their intermediate values and states, with heartbeats that fail the trials of a
sweep that died and re-queue them; its grid, random and TPE samplers and its median and successive-halving
pruners are what a sweep needs; and it adds no scheduler beside the one the trials' own Ray fleets may use.

A trial is one setting at one seed, run as an ``aioseed run`` process in its own logdir,
DIRECTORY/<setting>/seed-<seed>. A retried trial reuses that logdir, so its run resumes from its last
checkpoint. The random and TPE samplers pick a setting for the first seed and queue the others; the grid
sampler covers settings x seeds. A setting pruned at one seed is not run at the others. With ``[sweep] keep``
each finished trial is also kept as a small result to commit (``aioseed.results.kept``), and a pair kept there
is done: a sweep can be carried on elsewhere with only those results, and its report reads them.
"""

from __future__ import annotations

import contextlib
import logging
import pathlib
import queue
import signal
import threading
import tomllib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import structlog
import tomli_w

from aioseed.compose import config_file
from aioseed.errors import UserError
from aioseed.results.curves import Point
from aioseed.results.kept import TRIAL, keep, kept_curve
from aioseed.sweep.config import Sweep, SweepConfig, read_sweep
from aioseed.sweep.optuna_study import RETRIES, check_unchanged, one_pop_at_a_time, study_of
from aioseed.sweep.pairs import FRESH, beyond_budget, duplicate, failed_pairs, prune_a_duplicate, setting_slug, unfinished
from aioseed.sweep.trial import Pruned, Stopped, TrialFailed, claim, command, run_trial, short_of_stop, write_config
from aioseed.tables import merged, nested

if TYPE_CHECKING:
    import optuna

    from aioseed.commands.run import RunConfig
    from aioseed.server.config import StopConfig

log = structlog.get_logger()

def trial_table(sweep: Sweep, params: dict[str, Any], seed: int, logdir: pathlib.Path) -> dict[str, Any]:
    """The trial's ``aioseed run`` config: [run], the setting, its seed and logdir, and no console unless
    [run] asks for one (trials on one machine would share its port)."""
    own: dict[str, Any] = {**params, "learner.seed": seed, "learner.logdir": str(logdir)}
    if "enabled" not in sweep.run.get("learner", {}).get("console", {}):
        own["learner.console.enabled"] = False
    return merged(sweep.run, nested(own))


def check(sweep: Sweep) -> int:
    """Parses one trial's config as ``aioseed run`` will, so that a wrong key or value fails now, not
    in every trial; returns its return window (what a trial's mean return averages)."""
    params = {k: v[0] for k, v in sweep.grid.items()} or {k: d.choices[0] if d.choices else d.low for k, d in sweep.space.items()}
    return run_config(sweep, trial_table(sweep, params, sweep.seeds[0], sweep.directory / "check")).learner.return_window


def run_config(sweep: Sweep, table: dict[str, Any]) -> RunConfig:
    """The ``aioseed run`` config a trial's ``table`` gives on the sweep's preset."""
    import tyro

    from aioseed.commands.run import RunConfig
    from aioseed.presets import preset_flags

    with _PARSING:
        flags = [*preset_flags(sweep.preset), *config_file.as_flags(table, RunConfig, f"{sweep.source} (a trial's [run])")]
        return tyro.cli(RunConfig, args=flags, prog=f"aioseed run (a trial of {sweep.source})")


_PARSING = threading.Lock()
"""tyro's caches are not thread-safe: two workers' trials parsed at once raised KeyError inside it."""


def objective(
    sweep: Sweep, study: optuna.Study, trial: optuna.Trial, window: int = 100, stopping: threading.Event | None = None
) -> float:
    """``window``: the trials' return window; ``stopping``: set once the sweep is told to stop."""
    import optuna

    params = _suggest(sweep, trial)
    slug = setting_slug(params)
    seed = trial.user_attrs.get("seed")
    fresh = sweep.sampler != "grid" and seed is None  # random, TPE: a setting's first seed; the others queue
    seed = trial.suggest_categorical("seed", list(sweep.seeds)) if sweep.sampler == "grid" else (sweep.seeds[0] if fresh else seed)
    trial.set_user_attr("seed", seed)
    trial.set_user_attr("setting", slug)
    if fresh:
        trial.set_user_attr(FRESH, True)
    if fresh:
        beyond_budget(study, trial, slug, sweep.trials)
    done = prune_a_duplicate(study, trial, slug, seed)  # once it goes on, nothing but its run prunes it
    if fresh:
        for other in sweep.seeds[1:]:
            study.enqueue_trial(params, user_attrs={"seed": other})
    pruned = [t for t in done if t.state == optuna.trial.TrialState.PRUNED and t.user_attrs.get("setting") == slug]
    if pruned:
        raise optuna.TrialPruned(f"{slug} was pruned at seed {pruned[0].user_attrs.get('seed')}")
    if stopping is not None and stopping.is_set():  # a trial handed out after the signal starts no run; it fails,
        raise Stopped("the sweep stopped before this trial ran")  # named, so the next invocation queues it again
    logdir = sweep.directory / slug / f"seed-{seed}"
    table = trial_table(sweep, params, seed, logdir)
    kept = None if sweep.keep is None else sweep.keep / slug / f"seed-{seed}"
    try:  # a setting the run refuses fails its own trial only, as its run's process would
        learner = run_config(sweep, table).learner
    except (SystemExit, ValueError, UserError) as exc:
        raise TrialFailed(f"{slug} at seed {seed}: its config does not parse ({exc})") from None
    stop, window = learner.stop, learner.return_window  # this setting's own window, where the grid varies it
    points = None if kept is None else kept_result(kept, table, sweep.preset, stop)
    if points:  # kept by an earlier sweep, here or elsewhere: done
        trial.set_user_attr("logdir", str(kept))
        log.info("trial_kept", trial=trial.number, setting=slug, seed=seed, kept=str(kept), mean_return=round(points[-1].mean_return, 4))
        return points[-1].mean_return
    with claim(logdir) as mine:
        if not mine:  # a worker on this machine (a thread, or another sweep) trains it: the records missed it
            duplicate(study, trial, f"{slug} at seed {seed} is running in {logdir} (claimed by another worker)")
        trial.set_user_attr("logdir", str(logdir))
        config = write_config(logdir, table)
        log.info("trial_started", trial=trial.number, setting=slug, seed=seed, logdir=str(logdir))

        def report(value: float, frames: int) -> bool:
            trial.report(value, frames)
            return trial.should_prune()

        try:
            value = run_trial(command(sweep.preset, config), logdir, sweep.report_every_frames, report, window, stopping, stop)
        except Pruned as stopped:
            log.info("trial_pruned", trial=trial.number, setting=slug, seed=seed, frames=stopped.frames)
            raise optuna.TrialPruned(str(stopped)) from None
    log.info("trial_finished", trial=trial.number, setting=slug, seed=seed, mean_return=round(value, 4))
    if kept is not None:
        try:
            trial.set_user_attr("logdir", str(keep(logdir, kept, window)))
            log.info("trial_kept", trial=trial.number, setting=slug, seed=seed, kept=str(kept))
        except (OSError, UserError) as exc:  # the trial stands; its logdir holds the run
            log.error("trial_not_kept", trial=trial.number, setting=slug, seed=seed, kept=str(kept), error=str(exc))
    return value


def kept_result(kept: pathlib.Path, table: dict[str, Any], preset: str, stop: StopConfig | None = None) -> list[Point] | None:
    """The curve of the run kept in ``kept`` if it ran from ``table`` (its logdir aside) on ``preset`` and reached
    its ``stop`` conditions, else None: a kept run of other settings (a changed [run], budget or preset) is run
    again, and one that cannot be read or ended short (stopped from outside) is logged and run again. (A preset's
    own contents edited since are not compared.)"""
    try:
        points = kept_curve(kept)
        if not points:
            return None
        ran = config_file.read(kept / TRIAL) if (kept / TRIAL).is_file() else None
        ran_on = config_file.read(kept / "config.toml").get("preset", "none")
    except (OSError, ValueError) as exc:
        log.warning("kept_result_unreadable", kept=str(kept), error=str(exc))
        return None
    wanted = tomllib.loads(tomli_w.dumps({"command": "run", **table}))
    if ran is None or _without_logdir(ran) != _without_logdir(wanted) or ran_on != preset:
        log.warning(
            "kept_result_of_other_settings", kept=str(kept), preset=ran_on,
            hint="its trial.toml or preset differs from this trial's: it runs again",
        )
        return None
    if stop is not None and (short := short_of_stop(points, stop)) is not None:
        log.warning("kept_result_short", kept=str(kept), why=short, hint="it runs again (from its checkpoint, where its logdir is here)")
        return None
    return points


def _without_logdir(table: dict[str, Any]) -> dict[str, Any]:
    return {**table, "learner": {k: v for k, v in table.get("learner", {}).items() if k != "logdir"}}


def _suggest(sweep: Sweep, trial: optuna.Trial) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for key, values in sweep.grid.items():
        params[key] = trial.suggest_categorical(key, list(values))
    for key, space in sweep.space.items():
        if space.choices:
            params[key] = trial.suggest_categorical(key, list(space.choices))
        elif space.integer:
            params[key] = trial.suggest_int(key, int(space.low), int(space.high), log=space.log)
        else:
            params[key] = trial.suggest_float(key, float(space.low), float(space.high), log=space.log)
    return params


def total_trials(sweep: Sweep) -> int:
    settings = 1
    for values in sweep.grid.values():
        settings *= len(values)
    return (settings if sweep.grid else sweep.trials) * len(sweep.seeds)


def remaining(sweep: Sweep, study: optuna.Study) -> int:
    """The (setting, seed) pairs not finished yet: failed, running, or still to run (``pairs.unfinished``)."""
    return unfinished(study, sweep.grid, sweep.trials, sweep.seeds)


def run(sweep: Sweep, workers: int = 1, stopping: threading.Event | None = None) -> optuna.Study:
    """Runs the study's remaining trials here, ``workers`` at a time, until every (setting, seed) is complete or
    pruned (counting those other machines ran). Trials that failed in an earlier invocation are queued
    once more. Raises ``Stopped`` once ``stopping`` is set, after the running trials' runs have stopped in order."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for handler in logging.getLogger("optuna").handlers:
        handler.addFilter(_without_own_traceback)
    window = check(sweep)
    study = one_pop_at_a_time(study_of(sweep), sweep.storage)
    check_unchanged(sweep, study)
    for failed in failed_pairs(study):
        study.enqueue_trial(failed.params, user_attrs={"seed": failed.user_attrs["seed"]})

    def stop_when_done(study: optuna.Study, _: optuna.trial.FrozenTrial) -> None:
        if not remaining(sweep, study):
            study.stop()

    errors: list[BaseException] = []
    if remaining(sweep, study):
        study.optimize(
            lambda trial: _stopping_all_on_error(objective, stopping, errors)(sweep, study, trial, window, stopping),
            n_trials=total_trials(sweep) * (RETRIES + 2),  # a bound: failed and repeated trials count towards it
            n_jobs=workers,  # threads, each waiting on its trial's run process
            callbacks=[stop_when_done],
            catch=(TrialFailed,),
        )
    if errors:  # Optuna drops a trial's error once it has stopped handing out trials (the study stopped): not here
        raise errors[0]
    return study


def _without_own_traceback(record: logging.LogRecord) -> bool:
    """Optuna logs a failed trial with its traceback. For the sweep's own exceptions (a run stopped in order, or one
    that failed, whose message names its trial.log) the line says it all: a traceback reads as a crash."""
    if record.exc_info and isinstance(record.exc_info[1], (Stopped, TrialFailed)):
        record.exc_info, record.exc_text = None, None
    return True


def _stopping_all_on_error(
    objective: Callable[..., float], stopping: threading.Event | None, errors: list[BaseException]
) -> Callable[..., float]:
    """``objective``, setting ``stopping`` when it raises what ends the optimisation (not a pruned or failed trial),
    and adding the error to ``errors``: Optuna then waits for the other workers' trials, whose runs must stop
    rather than train on."""
    import optuna

    def guarded(*args: Any) -> float:
        try:
            return objective(*args)
        except (optuna.TrialPruned, TrialFailed):
            raise
        except BaseException as exc:
            errors.append(exc)
            if stopping is not None:
                stopping.set()
            raise

    return guarded


@contextlib.contextmanager
def _stopping_on_signals(stopping: threading.Event, received: list[int]) -> Iterator[None]:
    """SIGINT and SIGTERM set ``stopping`` while the sweep runs (its number goes to ``received``): each worker
    stops its run in order (SIGTERM: checkpoint, exit) and its trial fails, to be queued again by the next
    invocation. A second signal ends the sweep at once (the default action), and the runs with it."""
    signals: queue.SimpleQueue[int | None] = queue.SimpleQueue()

    def watch() -> None:
        signum = signals.get()
        if signum is not None:
            log.warning("sweep_stopping", signal=signal.Signals(signum).name, hint="each running trial's run checkpoints and exits; a second signal ends them at once")
            stopping.set()

    def stop(signum: int, _: object) -> None:
        received.append(signum)
        for each in (signal.SIGINT, signal.SIGTERM):
            signal.signal(each, signal.SIG_DFL)
        # Only a put (SimpleQueue's is reentrant): Event.set, a log line or a thread's start take locks that the
        # interrupted main thread may hold (inside Event.wait, a write to stderr, or starting Optuna's heartbeat).
        signals.put(signum)

    watcher = threading.Thread(target=watch, name="sweep-signals", daemon=True)
    watcher.start()
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signals.put(None)
        watcher.join()


def main(config: SweepConfig) -> int:
    from optuna.trial import TrialState

    sweep = read_sweep(config.config)
    stopping, received = threading.Event(), []
    try:
        with _stopping_on_signals(stopping, received):
            study = run(sweep, config.workers, stopping)
    except Stopped:
        log.warning("sweep_stopped", study=sweep.name, hint="the running trials' runs checkpointed; run the sweep again to resume them")
        return 128 + (received[0] if received else signal.SIGINT)
    trials = study.get_trials(deepcopy=False)
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    failed = failed_pairs(study)
    left = remaining(sweep, study)  # failed, or running in another sweep
    log.info(
        "sweep_done", study=sweep.name, storage=sweep.storage, complete=len(done),
        pruned=sum(t.state == TrialState.PRUNED and not t.user_attrs.get("duplicate") for t in trials), failed=len(failed),
        unfinished=left,
    )
    if left > len(failed):
        log.warning(
            "sweep_unfinished", running_elsewhere=left - len(failed),
            hint="their trials run in another sweep, or ran in one killed under a minute ago (their heartbeat not yet stale): run the sweep again",
        )
    for trial in failed:
        log.error("trial_failed", setting=trial.user_attrs["setting"], seed=trial.user_attrs["seed"], logdir=trial.user_attrs.get("logdir"))
    if config.report:
        _report(sweep, [pathlib.Path(t.user_attrs["logdir"]) for t in done])
    return 1 if left else 0


def _report(sweep: Sweep, logdirs: list[pathlib.Path]) -> None:
    """``aioseed report``'s table over the trials' runs this machine holds (other machines' logdirs are named)."""
    import sys

    from aioseed.results.report import ReportConfig, report, table

    here = [logdir for logdir in logdirs if logdir.is_dir()]
    if len(here) < len(logdirs):
        log.warning("report_leaves_out", trials=len(logdirs) - len(here), hint="other machines ran them: [sweep] keep = DIR carries results")
    if here:
        sys.stdout.write(table(report(ReportConfig(runs=tuple(here), group_by=tuple(sweep.keys), out=sweep.directory / "report"))))

