"""The algorithms ``--agent`` can name, each published by its ``algos/<name>/builder.py``, and those other
installed packages publish under the entry-point group ``aioseed.algorithms``.

A new algorithm adds its folder and one line here; nothing outside ``algos/`` names it (docs/architecture.md).
"""

from __future__ import annotations

import importlib.metadata
from typing import Literal

import structlog

from aioseed.algos.builder import Algorithm
from aioseed.algos.impala.builder import IMPALA
from aioseed.algos.r2d2.builder import R2D2
from aioseed.algos.sac.builder import SAC
from aioseed.algos.td3.builder import TD3
from aioseed.errors import InvalidInput, close_matches

log = structlog.get_logger()

ALGORITHMS: dict[str, Algorithm] = {algorithm.name: algorithm for algorithm in (IMPALA, R2D2, SAC, TD3)}

PLUGINS = "aioseed.algorithms"
"""The entry-point group of algorithms from other packages, one ``Algorithm`` record each, under its name:
``[project.entry-points."aioseed.algorithms"]`` then ``my-algo = "my_package.builder:MY_ALGO"``."""


def algorithm(name: str) -> Algorithm:
    """The algorithm ``--agent NAME`` trains."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise InvalidInput(f"unknown agent {name!r}{close_matches(name, ALGORITHMS)}") from None


def register(entry: Algorithm) -> None:
    """Adds an algorithm (a plug-in's, or a test's) under its name."""
    ALGORITHMS[entry.name] = entry


def load_plugins() -> None:
    """Registers the installed packages' algorithms. One that fails to load, or is not an ``Algorithm`` of its
    entry's name, is left out with a warning: the built-in ones still run."""
    for entry in importlib.metadata.entry_points(group=PLUGINS):
        if entry.name in ALGORITHMS:
            continue
        try:
            found = entry.load()
        except Exception as exc:  # a plug-in's own bug must not stop every other run
            log.warning("algorithm_plugin_failed", name=entry.name, entry=entry.value, error=f"{type(exc).__name__}: {exc}")
            continue
        if not isinstance(found, Algorithm) or found.name != entry.name:
            log.warning("algorithm_plugin_failed", name=entry.name, entry=entry.value, error="not an Algorithm of that name")
            continue
        register(found)


load_plugins()

AgentName = Literal[tuple(ALGORITHMS)]  # type: ignore[valid-type]
"""``--agent``'s choices: the built-in algorithms and the installed plug-ins."""
