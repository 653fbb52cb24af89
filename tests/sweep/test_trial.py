"""A trial's run process: a Ctrl-C at the terminal reaches the sweep alone, which stops the run with one signal."""

from __future__ import annotations

import os
import signal
import sys
import threading

from tests.waiting import until

from aioseed.sweep.trial import TrialFailed, run_trial

CHILD = """
import os, signal, sys, time
path = sys.argv[1]
def record(number, frame):
    with open(path, "a") as f:
        f.write(signal.Signals(number).name + "\\n")
    if number == signal.SIGTERM:
        sys.exit(0)
signal.signal(signal.SIGINT, record)
signal.signal(signal.SIGTERM, record)
with open(path, "a") as f:
    f.write(f"ready {os.getpid()}\\n")
while True:
    time.sleep(0.05)
"""


async def test_a_ctrl_c_at_the_terminal_does_not_reach_the_trials_run(tmp_path) -> None:
    seen = tmp_path / "signals"
    failures: list[BaseException] = []

    def trial() -> None:
        try:
            run_trial([sys.executable, "-c", CHILD, str(seen)], tmp_path, 1000, lambda value, frames: False)
        except TrialFailed as exc:  # the stand-in leaves no curve
            failures.append(exc)

    thread = threading.Thread(target=trial)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # this process is in the terminal's group too
    try:
        thread.start()
        await until(lambda: seen.exists() and "ready" in seen.read_text(), "the run to start")
        pid = int(seen.read_text().split()[1])
        os.killpg(os.getpgrp(), signal.SIGINT)  # what Ctrl-C sends: the foreground process group
        os.kill(pid, signal.SIGTERM)  # the sweep's stop (Linux delivers pending signals lowest number first)
        thread.join(timeout=30)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert not thread.is_alive() and failures
    assert seen.read_text().split()[2:] == ["SIGTERM"]  # before: SIGINT, then SIGTERM (the run's exit at once)
