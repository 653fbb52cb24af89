"""One take of a queued trial at a time (``aioseed.sweep.optuna_study.one_pop_at_a_time``): between a sweep's
worker threads, and between sweeps in separate processes on one SQLite file."""

from __future__ import annotations

from tests.sweep.test_study import a_grid


def test_worker_threads_take_the_studys_queued_trials_one_at_a_time(tmp_path) -> None:
    """Optuna reads that a queued trial waits, then writes that it runs; on SQLite two worker threads both took one
    trial (its second run found the logdir claimed and pruned the trial under the first, whose next report to the
    pruned trial ended the sweep). The sweep serialises the take."""
    import threading
    import time

    from aioseed.sweep.optuna_study import one_pop_at_a_time, study_of

    study = study_of(a_grid(tmp_path, seeds=2))
    inside, most = [0], [0]

    def slow_pop():
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        time.sleep(0.05)  # between the read and the write
        inside[0] -= 1
        return None

    study._pop_waiting_trial_id = slow_pop
    one_pop_at_a_time(study, "sqlite://")  # in memory: the thread lock alone
    threads = [threading.Thread(target=study._pop_waiting_trial_id) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1


def test_sweeps_in_separate_processes_on_one_sqlite_file_take_queued_trials_one_at_a_time(tmp_path) -> None:
    """Two sweeps on one machine share the SQLite file but not a thread lock: each study here is wrapped on its
    own, as in two processes, and only the ``flock`` beside the database keeps their takes apart (the kernel's
    lock is per open file, so it holds between threads as between processes)."""
    import threading
    import time

    from aioseed.sweep.optuna_study import one_pop_at_a_time, sqlite_lock_file, study_of

    sweep = a_grid(tmp_path, seeds=2)
    inside, most, lock = [0], [0], threading.Lock()

    def slow_pop():
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        time.sleep(0.05)  # between the read and the write
        with lock:
            inside[0] -= 1

    studies = [study_of(sweep) for _ in range(2)]
    for study in studies:
        study._pop_waiting_trial_id = slow_pop
        one_pop_at_a_time(study, sweep.storage)
    threads = [threading.Thread(target=studies[i % 2]._pop_waiting_trial_id) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1
    assert sqlite_lock_file(sweep.storage) == sweep.directory / "study.db.take-lock"
    assert sqlite_lock_file("postgresql://host/db") is None and sqlite_lock_file("sqlite:///:memory:") is None
