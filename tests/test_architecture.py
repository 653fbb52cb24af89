"""The layering contracts in pyproject.toml ([tool.importlinter]), checked on the real import graph."""

from __future__ import annotations

import ast
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
    assert top == {"__init__", "learner", "stages", "config", "stopping"}
    stages = {p.name for p in (ROOT / "aioseed" / "server").iterdir() if (p / "__init__.py").exists()}
    assert stages == {"transport", "batching", "acting", "trajectories", "training", "reporting"}
    assert stages == {p.name for p in (ROOT / "tests" / "server").iterdir() if (p / "__init__.py").exists()}  # tests mirror it


DOOR = {"__init__", "__main__", "cli"}
GROUND_FLOOR = {"types", "spec", "action_space", "control", "errors", "by_side", "tokens", "tables", "log", "tf_start"}


def test_the_package_top_holds_only_the_door_and_the_ground_floor() -> None:
    """Issue 58: every other module sits in the folder of its role (commands/, compose/, results/, ...), and the
    ground floor stays small; pyproject.toml's contracts say what each may import."""
    top = {p.stem for p in (ROOT / "aioseed").glob("*.py")}
    assert top == DOOR | GROUND_FLOOR and len(GROUND_FLOOR) <= 10
    contracts = (ROOT / "pyproject.toml").read_text()
    assert all(f'"aioseed.{name}"' in contracts for name in GROUND_FLOOR)  # the ground floor's contract names them all


def test_the_tests_mirror_the_roles() -> None:
    """A module's tests sit in the folder named as its own: tests/commands/ for aioseed/commands/, and so on."""
    for role in ("commands", "compose", "results", "server", "algos", "clients"):
        assert (ROOT / "tests" / role / "__init__.py").exists(), role
    loose = {p.stem.removeprefix("test_") for p in (ROOT / "tests").glob("test_*.py")}
    assert loose <= GROUND_FLOOR | DOOR | {"architecture", "docs", "makefile", "proto_fresh", "wheel"}, loose


AGENT_CLASSES = {"ImpalaAgent", "ImpalaPolicy", "R2D2Agent", "SacAgent", "SidedAgent"}


def algorithm_branches(tree: ast.AST) -> list[int]:
    """Lines that branch on which algorithm trains: ``x.agent == "sac"`` (or ``!=``, ``in``) against an algorithm's
    name, or ``isinstance(x, ImpalaAgent)`` with an agent class."""
    from aioseed.algos.registry import ALGORITHMS

    names = {*ALGORITHMS, "vtrace"}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            on_agent = any(isinstance(side, ast.Attribute) and side.attr == "agent" for side in sides)
            literals = {c.value for side in sides for c in ast.walk(side) if isinstance(c, ast.Constant) and isinstance(c.value, str)}
            if on_agent and literals & names:
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" and len(node.args) == 2:
            classes = {c.id for c in ast.walk(node.args[1]) if isinstance(c, ast.Name)}
            if classes & AGENT_CLASSES:
                lines.append(node.lineno)
    return lines


def test_only_the_algorithms_name_an_algorithm() -> None:
    """Issue 58: the rest of aioseed reads an algorithm's ``Algorithm`` record (``aioseed.algos.registry``), so a
    new algorithm touches its own folder and one registry line, not the composition root, evaluation or serving."""
    found = {}
    for path in (ROOT / "aioseed").rglob("*.py"):
        if path.is_relative_to(ROOT / "aioseed" / "algos"):
            continue
        if lines := algorithm_branches(ast.parse(path.read_text())):
            found[str(path.relative_to(ROOT))] = lines
    assert not found, found
    assert algorithm_branches(ast.parse('if config.agent == "sac": pass\nisinstance(a, (ImpalaAgent,))')) == [1, 2]
