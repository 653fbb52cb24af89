"""Ordered shutdown on SIGINT/SIGTERM for the commands that serve (``aioseed learner``, ``run``, ``serve``)."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable

import structlog

log = structlog.get_logger()


INTERRUPTED = 130
"""Exit status after a second SIGINT or SIGTERM (the shell's for Ctrl-C)."""


def stop_on_signals(stop: Callable[[], None]) -> None:
    """The first SIGINT or SIGTERM starts the ordered shutdown (``stop``); a second exits at once, without the
    drain and the final checkpoint (which may take minutes with a large replay)."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)

    def first() -> None:
        log.info("stopping_on_signal", hint="send it again (Ctrl-C) to exit at once, without the final checkpoint")
        for sig in signals:
            loop.add_signal_handler(sig, at_once)
        stop()

    def at_once() -> None:
        log.warning("exiting_at_once", status=INTERRUPTED, checkpoint="skipped")
        for child in multiprocessing.active_children():  # aioseed run's actors would outlive it
            child.kill()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED)

    for sig in signals:
        loop.add_signal_handler(sig, first)
