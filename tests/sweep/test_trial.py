"""A trial's run process has a session of its own: a Ctrl-C at the terminal (SIGINT to the foreground process
group) reaches the sweep alone, which stops the run with one signal (a second one makes a run exit at once,
without its final checkpoint)."""

from __future__ import annotations

import os
import signal
import sys
import threading

from tests.waiting import until

from aioseed.results.curves import Point
from aioseed.server.config import StopConfig
from aioseed.sweep.trial import TrialFailed, run_trial, short_of_stop, value_at

CHILD = """
import os, signal, sys, time
path = sys.argv[1]
with open(path, "w") as f:
    f.write(f"{os.getpid()} {os.getsid(0)} {os.getpgrp()}\\n")
signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(0))
while True:
    time.sleep(0.05)
"""


async def test_a_trials_run_is_in_a_session_and_process_group_of_its_own(tmp_path) -> None:
    seen, failures = tmp_path / "ids", []

    def trial() -> None:
        try:
            run_trial([sys.executable, "-c", CHILD, str(seen)], tmp_path, 1000, lambda value, frames: False)
        except TrialFailed as exc:  # the stand-in leaves no curve
            failures.append(exc)

    thread = threading.Thread(target=trial)
    thread.start()
    try:
        await until(lambda: seen.exists() and seen.read_text().endswith("\n"), "the run to start")
        pid, session, group = (int(n) for n in seen.read_text().split())
        assert session == group == pid  # before: the sweep's session and group, which Ctrl-C reaches
        assert session != os.getsid(0) and group != os.getpgrp()
    finally:
        if seen.exists():  # the sweep's stop
            os.kill(int(seen.read_text().split()[0]), signal.SIGTERM)
        thread.join(timeout=30)
    assert not thread.is_alive() and failures


def test_the_pruner_hears_a_curves_value_at_a_step_only_from_points_at_or_before_it() -> None:
    """No episode had ended by 10K frames: the 25K point's return is not the 10K step's (the pruner would compare it
    with other trials' returns at 10K); at 20K it is the last point before."""
    points = [Point(12_000, 1.0, 5.0), Point(18_000, 2.0, 7.0), Point(25_000, 3.0, 9.0)]
    assert value_at(points, 10_000) is None
    assert value_at(points, 20_000) == 7.0 and value_at(points, 25_000) == 9.0


def test_a_curve_short_of_its_runs_stop_conditions_is_no_result() -> None:
    """A run stopped from outside exits in order with status 0: its curve, cut short, must not count as finished."""
    points = [Point(100_000, 60.0, 900.0), Point(181_000, 120.0, 1_400.0)]
    short = short_of_stop(points, StopConfig(after_frames=300_000))
    assert short is not None and "ends at 181000 frames" in short and "after_frames 300000" in short
    assert short_of_stop(points, StopConfig(after_frames=181_000)) is None
    assert short_of_stop(points, StopConfig(after_frames=300_000, at_return=1_000.0)) is None  # it reached its return
    assert short_of_stop(points, StopConfig(at_return=2_000.0)) is not None
    drained = [*points, Point(182_000, 121.0, 1_390.0)]  # episodes that ended in the drain after the stop at 1,400
    assert short_of_stop(drained, StopConfig(after_frames=300_000, at_return=1_400.0)) is None
    assert short_of_stop(points, StopConfig(after_frames=300_000, after_seconds=100.0)) is None  # time: not in a curve
    assert short_of_stop(points, StopConfig()) is None  # nothing to reach: it ran until stopped


def test_a_run_that_exits_0_short_of_its_budget_fails_its_trial(tmp_path) -> None:
    """The stand-in run writes a curve that ends at 2,000 frames and exits 0, as a run stopped from outside does."""
    from aioseed.server.reporting.summaries import SummaryWriter

    writer = SummaryWriter(tmp_path)
    for frames, value in ((1_000, 1.0), (2_000, 2.0)):
        writer({"charts/return": value}, frames, [(frames, value)])
    try:
        run_trial([sys.executable, "-c", "pass"], tmp_path, 1000, lambda value, frames: False, 1, None, StopConfig(after_frames=5_000))
    except TrialFailed as exc:
        assert "ends at 2000 frames" in str(exc) and "stopped from outside" in str(exc)
    else:
        raise AssertionError("a curve short of its budget finished the trial")
    assert run_trial([sys.executable, "-c", "pass"], tmp_path, 1000, lambda value, frames: False, 1, None, StopConfig(after_frames=2_000)) == 2.0
