"""A trial's run process has a session of its own: a Ctrl-C at the terminal (SIGINT to the foreground process
group) reaches the sweep alone, which stops the run with one signal (a second one makes a run exit at once,
without its final checkpoint)."""

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
