"""The structlog set-up: configuring again (a command run in-process) keeps loggers already in use capturable."""

from __future__ import annotations

import structlog
from structlog.testing import capture_logs

from aioseed import log as logging_setup

log = structlog.get_logger()


def test_a_logger_cached_before_a_second_configure_is_still_captured() -> None:
    log.info("before_configure")  # cached on first use, with the processors configured then
    logging_setup.configure()
    with capture_logs() as logs:
        log.info("after_configure", n=1)
    assert logs == [{"event": "after_configure", "n": 1, "log_level": "info"}]
