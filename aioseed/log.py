"""structlog set-up shared by every aioseed process: key=value events."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

_hidden: set[str] = set()
"""Events not written (``hide``): a live terminal display shows them instead."""


class _Stderr:
    """sys.stderr as it is at each write, so that a live display that redirects it (rich) prints log
    lines above itself."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _drop_hidden(logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    if event.get("event") in _hidden:
        raise structlog.DropEvent
    return event


_PROCESSORS: list[Any] = [
    _drop_hidden,
    structlog.contextvars.merge_contextvars,
    structlog.processors.add_log_level,
    structlog.processors.TimeStamper(fmt="%H:%M:%S"),
    structlog.processors.format_exc_info,
    structlog.dev.ConsoleRenderer(colors=False, pad_event_to=0, pad_level=False),
]
"""One list for every ``configure``: a logger cached on first use keeps the list it was built with, so a
second ``configure`` (a command run in-process) must not hand newer loggers another one. structlog's
``capture_logs`` edits the configured list in place and relies on that."""


def configure(level: str = "info") -> None:
    """Routes structlog events to stderr as ``time level event key=value``."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    structlog.configure(
        processors=_PROCESSORS,
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.PrintLoggerFactory(file=_Stderr()),
        cache_logger_on_first_use=True,
    )


def hide(*events: str) -> None:
    """Stops writing these events (until ``show``)."""
    _hidden.update(events)


def show(*events: str) -> None:
    _hidden.difference_update(events)
