"""structlog set-up shared by every aioseed process: key=value events."""

from __future__ import annotations

import logging
import os
import sys

import structlog


def configure(level: str = "info") -> None:
    """Routes structlog events to stderr as ``time level event key=value``."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S"),
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False, pad_event_to=0, pad_level=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelNamesMapping()[level.upper()]),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
