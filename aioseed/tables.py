"""Nested tables (TOML's, a config's document) and their dotted keys: ``learner.impala.learning_rate``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A nested table as dotted keys: ``{"learner.impala.learning_rate": ...}``."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, Mapping):
            flat |= flatten(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def nested(dotted: Mapping[str, Any]) -> dict[str, Any]:
    """``{"learner.impala.learning_rate": x}`` as ``{"learner": {"impala": {"learning_rate": x}}}``."""
    table: dict[str, Any] = {}
    for key, value in dotted.items():
        *parents, last = key.split(".")
        node = table
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return table


def merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``top``'s values on top, table by table."""
    out = dict(base)
    for key, value in top.items():
        out[key] = merged(out[key], value) if isinstance(value, Mapping) and isinstance(out.get(key), Mapping) else value
    return out
