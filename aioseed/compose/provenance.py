"""Where a run's code came from: aioseed's version, its git commit and whether the tree was dirty, and
the versions of the libraries a result depends on. ``config.toml`` records it as ``[provenance]``;
``aioseed eval`` and ``aioseed report`` carry it into their results."""

from __future__ import annotations

import importlib.metadata
import pathlib
import platform
import subprocess
from typing import Any

LIBRARIES = ("tensorflow", "gymnasium", "ale-py", "grpcio", "numpy", "mujoco", "gfootball", "envpool")
"""The distributions whose versions are recorded (those installed)."""

SOURCE = pathlib.Path(__file__).resolve().parent.parent
"""The directory holding the ``aioseed`` package: a git checkout's root when run from one."""


def provenance() -> dict[str, Any]:
    """``{"aioseed": version, "git_commit": sha or "unknown", "git_dirty": bool or "unknown", "python":
    version, <library>: version...}``. The commit is the checkout's the package runs from; dirty means
    tracked files differ from it (untracked files do not count). An installed wheel has no commit."""
    from aioseed import __version__

    commit, dirty = git_state(SOURCE)
    record: dict[str, Any] = {"aioseed": __version__, "git_commit": commit, "git_dirty": dirty, "python": platform.python_version()}
    for name in LIBRARIES:
        try:
            record[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return record


def git_state(directory: pathlib.Path) -> tuple[str, bool | str]:
    """(HEAD's sha, whether tracked files differ from it) of the checkout ``directory`` is the root of;
    ``("unknown", "unknown")`` outside one or without git."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(directory), *args], capture_output=True, text=True, timeout=10, check=True)
        return done.stdout.strip()

    try:
        if pathlib.Path(git("rev-parse", "--show-toplevel")).resolve() != directory.resolve():
            return "unknown", "unknown"  # the package sits inside some other repository (a venv in one)
        return git("rev-parse", "HEAD"), bool(git("status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return "unknown", "unknown"
