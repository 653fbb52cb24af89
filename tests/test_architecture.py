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


def test_no_module_is_over_400_lines() -> None:
    """Small modules, one concept each: a module past 400 lines is two concepts waiting to be split."""
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / "aioseed").rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert not long, long


def test_the_server_top_level_holds_only_the_learners_lifecycle() -> None:
    """Every other module sits in the sub-package of its stage on the data path."""
    top = {p.stem for p in (ROOT / "aioseed" / "server").glob("*.py")}
    assert top == {"__init__", "learner", "stages", "config", "stopping", "run_info"}
    stages = {p.name for p in (ROOT / "aioseed" / "server").iterdir() if (p / "__init__.py").exists()}
    assert stages == {"transport", "batching", "acting", "trajectories", "training", "reporting"}
    assert stages == {p.name for p in (ROOT / "tests" / "server").iterdir() if (p / "__init__.py").exists()}  # tests mirror it
