"""A bench's wait for its spawned processes: a process that dies first ends it at once, and none is left behind."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from aioseed.bench.children import ChildFailed, ended, reported


def _fails() -> None:
    raise SystemExit(3)


def _reports(results: multiprocessing.Queue) -> None:
    results.put({"frames": 7})


def _hangs() -> None:
    time.sleep(600)


def test_a_report_is_returned_and_a_process_that_dies_first_fails_the_wait_at_once() -> None:
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    good = context.Process(target=_reports, args=(results,), name="good")
    good.start()
    assert reported(results, [good], 60) == {"frames": 7}
    ended(good)
    bad = context.Process(target=_fails, name="bad")
    bad.start()
    with pytest.raises(ChildFailed, match="bad: exit code 3"):
        reported(context.Queue(), [bad], 3600)  # before: a blind get waited the whole timeout


def test_a_process_still_running_is_ended() -> None:
    hung = multiprocessing.get_context("spawn").Process(target=_hangs)
    hung.start()
    ended(hung, wait_s=0.5)
    assert not hung.is_alive() and hung.exitcode is not None


def test_a_timed_runs_figures_end_at_its_stop_and_a_run_that_stopped_otherwise_is_no_figure() -> None:
    from aioseed.bench.spawned import timed_history
    from aioseed.commands.run import RunSummary

    history = [{"time": t, "charts/frames": 100.0 * t} for t in (1.0, 2.0, 3.0, 3.5)]
    timed = RunSummary(300, 3, 0.0, "time", 3.0, 300, 0.0, history)
    assert timed_history(timed) == history[:3]  # not the drain's snapshot after the stop
    crashed = RunSummary(0, 0, 0.0, "actors exited", 1.0, 0, 0.0, history)
    with pytest.raises(ChildFailed, match=r"stopped early \(actors exited\)"):
        timed_history(crashed)  # before: frames/s read 0 (or divided by zero), exit 0
