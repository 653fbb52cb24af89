"""The algorithms ``--agent`` can name, each published by its ``algos/<name>/builder.py``.

A new algorithm adds its folder and one line here; nothing outside ``algos/`` names it (docs/architecture.md).
"""

from __future__ import annotations

from aioseed.algos.builder import Algorithm
from aioseed.algos.impala.builder import IMPALA
from aioseed.algos.r2d2.builder import R2D2
from aioseed.algos.sac.builder import SAC
from aioseed.errors import InvalidInput, close_matches

ALGORITHMS: dict[str, Algorithm] = {algorithm.name: algorithm for algorithm in (IMPALA, R2D2, SAC)}


def algorithm(name: str) -> Algorithm:
    """The algorithm ``--agent NAME`` trains."""
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise InvalidInput(f"unknown agent {name!r}{close_matches(name, ALGORITHMS)}") from None


def register(entry: Algorithm) -> None:
    """Adds an algorithm (a plug-in's, or a test's) under its name."""
    ALGORITHMS[entry.name] = entry
