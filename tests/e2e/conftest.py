"""Every test under tests/e2e runs real processes end to end: mark them ``e2e`` (``-m "not e2e"`` skips them)."""

from __future__ import annotations

import pathlib

import pytest

HERE = pathlib.Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.parents:
            item.add_marker(pytest.mark.e2e)
