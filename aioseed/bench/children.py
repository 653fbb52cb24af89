"""How a bench waits for what its spawned processes report: a process that dies first ends the wait at once,
and none is left running after it."""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from typing import Any


class ChildFailed(RuntimeError):
    """A bench's process exited, or ran out of time, before it reported."""


def reported(results: multiprocessing.Queue, processes: Sequence[BaseProcess], timeout_s: float) -> Any:
    """The next result on ``results``; ChildFailed, at once, when every one of ``processes`` that could report has
    exited first (their errors are above), or after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return results.get(timeout=1.0)
        except queue.Empty:
            if not any(process.is_alive() for process in processes):
                codes = ", ".join(f"{process.name}: exit code {process.exitcode}" for process in processes)
                raise ChildFailed(f"the bench's processes exited without a result ({codes}); their errors are above") from None
            if time.monotonic() > deadline:
                raise ChildFailed(f"no result within {timeout_s:.0f} s") from None


def ended(*processes: BaseProcess, wait_s: float = 60.0) -> None:
    """Joins ``processes``, ending those still running after ``wait_s`` (a bench never leaves one behind)."""
    for process in processes:
        process.join(wait_s)
        if process.is_alive():
            process.terminate()
            process.join(10)
        if process.is_alive():
            process.kill()
            process.join()
