"""The layering contracts in pyproject.toml ([tool.importlinter]), checked on the real import graph."""

from __future__ import annotations

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_import_contracts_hold() -> None:
    """No import cycles; the server imports neither clients nor console; actors load no TensorFlow."""
    lint = pathlib.Path(sys.executable).parent / "lint-imports"
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "0 broken" in result.stdout
